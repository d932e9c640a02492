/* The table of collective kinds and the call signature codec: the one
 * place that knows what a frame's signature says. */
#include <stdio.h>
#include <string.h>
#include <rlxcoll/rlxcoll.h>
#include "base/byteorder.h"
#include "call.h"

enum { ARG_COUNT = 1, ARG_RECVCOUNT = 2, ARG_COUNTS = 4, ARG_DTYPE = 8, ARG_OP = 16, ARG_ROOT = 32 };

static const struct {
  const char *call;
  int args;
} kinds[RLX__CK_MAX + 1] = {
#define XX(name, value, call, args) [value] = {call, args},
    RLX__COLL_KIND_MAP(XX)
#undef XX
};

void rlx__call_encode(const struct rlx__call *c, uint8_t sig[RLX__SIG_SIZE]) {
  memset(sig, 0, RLX__SIG_SIZE);
  sig[0] = (uint8_t)c->kind;
  sig[1] = (uint8_t)c->dtype;
  sig[2] = (uint8_t)c->op;
  rlx__put32(sig + 4, (uint32_t)c->root);
  rlx__put64(sig + 8, c->count);
}

void rlx__call_decode(const uint8_t sig[RLX__SIG_SIZE], struct rlx__call *c) {
  c->kind = sig[0];
  c->dtype = sig[1];
  c->op = sig[2];
  c->root = (int32_t)rlx__get32(sig + 4);
  c->count = rlx__get64(sig + 8);
}

int rlx__call_counted(int kind) {
  return kind > 0 && kind <= RLX__CK_MAX && (kinds[kind].args & (ARG_COUNT | ARG_RECVCOUNT));
}

const char *rlx__call_name(int kind) {
  return kind > 0 && kind <= RLX__CK_MAX && kinds[kind].call ? kinds[kind].call : "?";
}

void rlx__call_describe(char *buf, size_t len, const char *name, const struct rlx__call *c) {
  if (c->kind <= 0 || c->kind > RLX__CK_MAX || kinds[c->kind].call == NULL) {
    snprintf(buf, len, "an unknown collective (kind %d)", c->kind);
    return;
  }
  int args = kinds[c->kind].args;
  const char *dn = rlx_dtype_name((rlx_dtype_t)c->dtype), *on = rlx_op_name((rlx_op_t)c->op);
  size_t used = 0;
  int n = snprintf(buf, len, "%s(", name ? name : kinds[c->kind].call);
  /* Each argument the call has, in the order of its prototype. */
  char part[64];
  const char *sep = "";
  for (int a = ARG_COUNT; a <= ARG_ROOT && n >= 0 && (size_t)n < len; a <<= 1) {
    if (!(args & a))
      continue;
    switch (a) {
    case ARG_COUNT: snprintf(part, sizeof(part), "count=%llu", (unsigned long long)c->count); break;
    case ARG_RECVCOUNT:
      snprintf(part, sizeof(part), "recvcount=%llu", (unsigned long long)c->count);
      break;
    case ARG_COUNTS: /* (the hash of the counts, in the root field) */
      snprintf(part, sizeof(part), "recvcounts #%08x", (unsigned)c->root);
      break;
    case ARG_DTYPE: snprintf(part, sizeof(part), "%s", dn ? dn : "?"); break;
    case ARG_OP: snprintf(part, sizeof(part), "%s", on ? on : "?"); break;
    default: snprintf(part, sizeof(part), "root=%d", c->root); break;
    }
    used = (size_t)n;
    n += snprintf(buf + used, len - used, "%s%s", sep, part);
    sep = ", ";
  }
  if (n >= 0 && (size_t)n < len)
    snprintf(buf + n, len - (size_t)n, ")");
}
