/* Error codes to text (from the RLX_ERR_MAP table) and the thread-local
 * detail message behind rlx_errmsg(). Linked into both librlxcoll and
 * librlxcompute. */
#include <stdio.h>
#include <string.h>
#include "base/internal.h"

/* Exported on purpose (under an internal name): a program that links both
 * libraries gets each of them writing and rlx_errmsg() reading one buffer,
 * the first definition the dynamic linker finds; with a hidden buffer per
 * library, rlx_errmsg() would miss the other library's errors. */
__attribute__((visibility("default"))) _Thread_local char rlx__errmsg_buf[1024];
#define errmsg_buf rlx__errmsg_buf

const char *rlx_strerror(int err) {
  switch (err) {
  case RLX_OK:
    return "success";
#define XX(name, value, text)                                                  \
  case RLX_ERR_##name:                                                         \
    return text;
    RLX_ERR_MAP(XX)
#undef XX
  default:
    return "unknown error";
  }
}

const char *rlx__err_name(int err) {
  switch (err) {
  case RLX_OK:
    return "RLX_OK";
#define XX(name, value, text)                                                  \
  case RLX_ERR_##name:                                                         \
    return "RLX_ERR_" #name;
    RLX_ERR_MAP(XX)
#undef XX
  default:
    return "RLX_ERR_UNKNOWN";
  }
}

const char *rlx_errmsg(void) { return errmsg_buf; }

void rlx__err_setmsg(const char *msg) {
  snprintf(errmsg_buf, sizeof(errmsg_buf), "%s", msg ? msg : "");
}

int rlx__err(int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(errmsg_buf, sizeof(errmsg_buf), fmt, ap);
  va_end(ap);
  rlx__debug("%s: %s", rlx__err_name(err), errmsg_buf);
  return err;
}
