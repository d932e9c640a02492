/* libFuzzer target: the frame header decoder, the call signature a
 * decoded header carries (read and described as a mismatch message
 * would), and the CRC of whatever follows. Any input must decode to OK or
 * a status, never crash; a header that decodes must re-encode to the same
 * 64 bytes, and a packed one (frame.h) to the same 24. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "coll/call.h"
#include "transport/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct rlx__frame_hdr h;
  int st = rlx__frame_decode(data, size, &h);
  (void)rlx__frame_strstatus(st);
  if (st == RLX__FRAME_OK) {
    unsigned char again[RLX__FRAME_HDR_SIZE];
    rlx__frame_encode(&h, again);
    if (memcmp(again, data, RLX__FRAME_HDR_SIZE) != 0)
      abort(); /* decode accepted what encode would not produce */
    struct rlx__call c;
    char text[200];
    rlx__call_decode(h.sig, &c);
    rlx__call_describe(text, sizeof(text), NULL, &c);
    if (strlen(text) >= sizeof(text))
      abort();
  }
  /* the packed form (shared memory's small messages): what unpacks packs
   * back to the same 24 bytes, its length the rest */
  struct rlx__frame_hdr p;
  if (rlx__frame_unpack(data, size, 7, &p) == RLX__FRAME_OK) {
    unsigned char again[RLX__FRAME_PACKED_SIZE];
    if (!rlx__frame_packs(&p) || p.payload_len != size - RLX__FRAME_PACKED_SIZE || p.src != 7)
      abort();
    rlx__frame_pack(&p, again);
    if (memcmp(again, data, RLX__FRAME_PACKED_SIZE) != 0)
      abort();
  }
  if (size > RLX__FRAME_HDR_SIZE &&
      rlx__crc32c(data + RLX__FRAME_HDR_SIZE, size - RLX__FRAME_HDR_SIZE) !=
          rlx__crc32c_sw(data + RLX__FRAME_HDR_SIZE, size - RLX__FRAME_HDR_SIZE))
    abort(); /* the SSE4.2 and table CRCs disagree */
  return 0;
}
