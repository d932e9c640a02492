/* TCP transport: listeners bound to one IP address, connections with
 * TCP_NODELAY (collectives are latency-bound at small sizes). */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "bootstrap/bootstrap.h"
#include "p2p_internal.h"

int rlx__parse_hostport(const char *s, struct sockaddr_storage *ss) {
  char host[128];
  const char *colon = strrchr(s, ':');
  long port;
  char *end;
  size_t hl;
  if (colon == NULL)
    return UV_EINVAL;
  port = strtol(colon + 1, &end, 10);
  if (*end != '\0' || port < 0 || port > 65535)
    return UV_EINVAL;
  hl = (size_t)(colon - s);
  if (hl >= sizeof(host))
    return UV_EINVAL;
  memcpy(host, s, hl);
  host[hl] = '\0';
  memset(ss, 0, sizeof(*ss));
  if (host[0] == '[' && hl >= 2 && host[hl - 1] == ']') {
    host[hl - 1] = '\0';
    return uv_ip6_addr(host + 1, (int)port, (struct sockaddr_in6 *)ss);
  }
  return uv_ip4_addr(host, (int)port, (struct sockaddr_in *)ss);
}

static int tcp_listen(uv_loop_t *loop, union rlx__stream_handle *h, const char *where,
                      char *addr_out, size_t addr_len, uv_connection_cb cb) {
  struct sockaddr_storage ss;
  char ip[64], spec[96];
  int len = sizeof(ss), rc;
  if (strchr(where, ':') != NULL && where[0] != '[')
    snprintf(spec, sizeof(spec), "[%s]:0", where);
  else
    snprintf(spec, sizeof(spec), "%s:0", where);
  if ((rc = rlx__parse_hostport(spec, &ss)) != 0)
    return rc;
  if ((rc = uv_tcp_init(loop, &h->tcp)) != 0)
    return rc;
  if ((rc = uv_tcp_bind(&h->tcp, (struct sockaddr *)&ss, 0)) != 0 ||
      (rc = uv_listen(&h->stream, 128, cb)) != 0 ||
      (rc = uv_tcp_getsockname(&h->tcp, (struct sockaddr *)&ss, &len)) != 0)
    return rc; /* the caller closes h */
  if (ss.ss_family == AF_INET6) {
    uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof(ip));
    snprintf(addr_out, addr_len, "[%s]:%d", ip, ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
  } else {
    uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof(ip));
    snprintf(addr_out, addr_len, "%s:%d", ip, ntohs(((struct sockaddr_in *)&ss)->sin_port));
  }
  return 0;
}

static int tcp_connect(uv_loop_t *loop, union rlx__stream_handle *h, uv_connect_t *req,
                       const char *addr, uv_connect_cb cb) {
  struct sockaddr_storage ss;
  int rc;
  if ((rc = rlx__parse_hostport(addr, &ss)) != 0)
    return rc;
  if ((rc = uv_tcp_init(loop, &h->tcp)) != 0)
    return rc;
  uv_tcp_nodelay(&h->tcp, 1);
  return uv_tcp_connect(req, &h->tcp, (struct sockaddr *)&ss, cb);
}

static int tcp_accept(uv_loop_t *loop, uv_stream_t *server, union rlx__stream_handle *h) {
  int rc;
  if ((rc = uv_tcp_init(loop, &h->tcp)) != 0)
    return rc;
  if ((rc = uv_accept(server, &h->stream)) != 0)
    return rc;
  uv_tcp_nodelay(&h->tcp, 1);
  return 0;
}

static char *tcp_card_addr(struct rlx__card *card, size_t *cap) {
  *cap = sizeof(card->tcp);
  return card->tcp;
}

static int tcp_reaches(const struct rlx__card *me, const struct rlx__card *them) {
  (void)me;
  return them->tcp[0] != '\0';
}

/* Strangers on TCP are known by their address; the handshake decides. */
static int tcp_admit(uv_stream_t *s, char *label, size_t len) {
  struct sockaddr_storage ss;
  int n = sizeof(ss);
  snprintf(label, len, "?");
  if (uv_tcp_getpeername((uv_tcp_t *)s, (struct sockaddr *)&ss, &n) == 0) {
    if (ss.ss_family == AF_INET)
      uv_ip4_name((struct sockaddr_in *)&ss, label, len);
    else
      uv_ip6_name((struct sockaddr_in6 *)&ss, label, len);
  }
  return 0;
}

static unsigned long tcp_retransmissions(uv_handle_t *h) {
  uv_os_fd_t fd;
  struct tcp_info ti;
  socklen_t len = sizeof(ti);
  if (uv_fileno(h, &fd) == 0 && getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0)
    return ti.tcpi_total_retrans;
  return 0;
}

const struct rlx__transport_ops rlx__tcp_transport = {
    .name = "tcp",
    .same_host = 0,
    .card_addr = tcp_card_addr,
    .reaches = tcp_reaches,
    .listen = tcp_listen,
    .connect = tcp_connect,
    .accept = tcp_accept,
    .admit = tcp_admit,
    .retransmissions = tcp_retransmissions,
    .pollable = 1,
    RLX__STREAM_DATA_PATH,
};
