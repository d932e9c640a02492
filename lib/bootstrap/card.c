/* Business card codec: fixed 288 bytes, little-endian, strings NUL-padded
 * and checked for termination on decode; the last 4 bytes are the rank's
 * generation (0 for the job's first ranks, n for those admitted by the
 * job's n-th growth). */
#include <string.h>
#include "bootstrap.h"
#include "base/byteorder.h"

void rlx__card_encode(const struct rlx__card *c, uint8_t out[RLX__CARD_SIZE]) {
  memset(out, 0, RLX__CARD_SIZE);
  memcpy(out, "RLXB", 4);
  rlx__put32(out + 4, c->rank);
  rlx__put32(out + 8, c->size);
  rlx__put32(out + 12, c->election_id);
  memcpy(out + 16, c->host, strnlen(c->host, sizeof(c->host) - 1));
  memcpy(out + 112, c->tcp, strnlen(c->tcp, sizeof(c->tcp) - 1));
  memcpy(out + 176, c->unix_path, strnlen(c->unix_path, 107));
  rlx__put32(out + 284, c->generation);
}

int rlx__card_decode(const uint8_t in[RLX__CARD_SIZE], struct rlx__card *c) {
  if (memcmp(in, "RLXB", 4) != 0)
    return -1;
  if (memchr(in + 16, 0, 96) == NULL || memchr(in + 112, 0, 64) == NULL ||
      memchr(in + 176, 0, 108) == NULL)
    return -1;
  memset(c, 0, sizeof(*c));
  c->rank = rlx__get32(in + 4);
  c->size = rlx__get32(in + 8);
  c->election_id = rlx__get32(in + 12);
  memcpy(c->host, in + 16, 96);
  memcpy(c->tcp, in + 112, 64);
  memcpy(c->unix_path, in + 176, 108);
  c->generation = rlx__get32(in + 284);
  return 0;
}
