/* rlxcoll error codes: one X-macro table gives the enum, rlx_strerror and the
 * names used in logs and man pages. Every call of librlxcoll and of
 * librlxcompute returns RLX_OK or one of these, and rlx_errmsg() says why. */
#ifndef RLXCOLL_ERRORS_H
#define RLXCOLL_ERRORS_H

#define RLX_ERR_MAP(XX)                                                        \
  XX(ARG,       -1,  "invalid argument")                                       \
  XX(NOMEM,     -2,  "out of memory")                                          \
  XX(STATE,     -3,  "call not valid in this state")                           \
  XX(BOOTSTRAP, -4,  "bootstrap failed")                                       \
  XX(AUTH,      -5,  "authentication failed")                                  \
  XX(PEER_LOST, -6,  "peer lost")                                              \
  XX(TIMEOUT,   -7,  "operation timed out")                                    \
  XX(MISMATCH,  -8,  "ranks called mismatched collectives")                    \
  XX(CORRUPT,   -9,  "corrupt frame received")                                 \
  XX(REVOKED,   -10, "communicator revoked")                                   \
  XX(DEVICE,    -11, "compute device failed")                                  \
  XX(SYS,       -12, "system call failed")                                   \
  XX(INTERRUPTED, -13, "call interrupted")                                     \
  XX(TRUNCATE,  -14, "message longer than the receive buffer")

enum rlx_error {
  RLX_OK = 0,
#define RLX__ERR_ENUM(name, value, text) RLX_ERR_##name = (value),
  RLX_ERR_MAP(RLX__ERR_ENUM)
#undef RLX__ERR_ENUM
};

#ifdef __cplusplus
extern "C" {
#endif

#ifndef RLX_API
#if defined(__GNUC__)
#define RLX_API __attribute__((visibility("default")))
#else
#define RLX_API
#endif
#endif

/* The text of an error code, and the detail of this thread's last error
 * ("rank 2 called ... where rank 0 called ..."). Both libraries provide
 * them and share the detail: a program may link either or both. */
RLX_API const char *rlx_strerror(int err);
RLX_API const char *rlx_errmsg(void);

#ifdef __cplusplus
}
#endif

#endif
