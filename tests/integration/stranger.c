/* stranger: connects to an rlxcoll rank's TCP port and misbehaves, for the
 * strangers tests. Modes: silent (connect, say nothing), random (random
 * bytes), wrongkey (a full handshake with the wrong job key), replay
 * (a handshake made with the right key for another session, played back:
 * needs STRANGER_KEY, and STRANGER_FROM/STRANGER_TO for the ranks it
 * claims), loris (half a handshake header, then nothing: slow-loris).
 *   stranger HOST:PORT MODE */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <unistd.h>
#include "bootstrap/bootstrap.h"
#include "bootstrap/handshake.h"

int main(int argc, char **argv) {
  int fd;
  uint8_t hello[RLX__HS_HELLO_SIZE], chal[RLX__HS_CHALLENGE_SIZE], proof[RLX__HS_PROOF_SIZE];
  uint64_t deadline = rlx__bs_now_ns() + 5000000000ull;
  struct rlx__hs hs;
  if (argc != 3) {
    fprintf(stderr, "usage: stranger HOST:PORT silent|random|wrongkey|replay|loris\n");
    return 2;
  }
  if (rlx__sock_connect(argv[1], deadline, &fd) != 0) {
    fprintf(stderr, "stranger: cannot connect to %s\n", argv[1]);
    return 1;
  }
  if (strcmp(argv[2], "silent") == 0) {
    sleep(1);
  } else if (strcmp(argv[2], "random") == 0) {
    uint8_t junk[4096];
    for (size_t i = 0; i < sizeof(junk); i++)
      junk[i] = (uint8_t)rand();
    rlx__sock_write_full(fd, junk, sizeof(junk), deadline);
  } else if (strcmp(argv[2], "wrongkey") == 0) {
    /* Pose as rank 1 of the job talking to rank 0, with a wrong key. */
    rlx__hs_init(&hs, "not-the-job-key", 1, RLX__HS_DATA);
    rlx__hs_client_hello(&hs, 0, hello);
    rlx__sock_write_full(fd, hello, sizeof(hello), deadline);
    if (rlx__sock_read_full(fd, chal, sizeof(chal), deadline) == 0) {
      int st = rlx__hs_client_challenge(&hs, chal, proof);
      printf("stranger: the rank's challenge %s\n",
             st == RLX__HS_BAD_MAC ? "fails under our wrong key, as it should" : "verified?!");
      memcpy(proof, "RLXP", 4);
      memset(proof + 4, 0x5a, 32);
      rlx__sock_write_full(fd, proof, sizeof(proof), deadline);
    }
  } else if (strcmp(argv[2], "replay") == 0) {
    /* Record a handshake between us and a server of our own, both holding
     * the job key; then play the client's half back to the rank. Its
     * challenge carries a fresh nonce, so the recorded proof must fail. */
    const char *key = getenv("STRANGER_KEY");
    uint32_t from = (uint32_t)atoi(getenv("STRANGER_FROM") ? getenv("STRANGER_FROM") : "1");
    uint32_t to = (uint32_t)atoi(getenv("STRANGER_TO") ? getenv("STRANGER_TO") : "0");
    struct rlx__hs srv;
    uint8_t chal0[RLX__HS_CHALLENGE_SIZE];
    if (key == NULL || rlx__hs_init(&hs, key, from, RLX__HS_DATA) != 0 ||
        rlx__hs_init(&srv, key, to, RLX__HS_DATA) != 0) {
      fprintf(stderr, "stranger: replay needs STRANGER_KEY\n");
      return 2;
    }
    rlx__hs_client_hello(&hs, to, hello);
    if (rlx__hs_server_hello(&srv, hello, chal0) != RLX__HS_OK ||
        rlx__hs_client_challenge(&hs, chal0, proof) != RLX__HS_OK ||
        rlx__hs_server_proof(&srv, proof) != RLX__HS_OK) {
      fprintf(stderr, "stranger: recording a handshake failed\n");
      return 1;
    }
    rlx__sock_write_full(fd, hello, sizeof(hello), deadline);
    if (rlx__sock_read_full(fd, chal, sizeof(chal), deadline) == 0) {
      printf("stranger replay: the rank's challenge %s\n",
             memcmp(chal, chal0, sizeof(chal)) ? "is fresh" : "repeats the recorded one?!");
      rlx__sock_write_full(fd, proof, sizeof(proof), deadline);
    }
  } else if (strcmp(argv[2], "loris") == 0) {
    /* Half a HELLO, then wait: the rank must not keep us past its
     * handshake deadline (10 s), nor stall for us. */
    struct timespec t0, t1;
    rlx__hs_init(&hs, "whatever", 1, RLX__HS_DATA);
    rlx__hs_client_hello(&hs, 0, hello);
    rlx__sock_write_full(fd, hello, RLX__HS_HELLO_SIZE / 2, deadline);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char b;
    int rc = rlx__sock_read_full(fd, &b, 1, rlx__bs_now_ns() + 15000000000ull);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("stranger loris: %s after %.1f s\n", rc != 0 ? "dropped" : "still connected",
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    close(fd);
    return 0;
  } else {
    fprintf(stderr, "stranger: unknown mode %s\n", argv[2]);
    close(fd);
    return 2;
  }
  /* The rank must drop us: wait for its close (bounded). */
  char b;
  int rc = rlx__sock_read_full(fd, &b, 1, rlx__bs_now_ns() + 3000000000ull);
  printf("stranger %s: %s\n", argv[2], rc != 0 ? "dropped" : "still connected");
  close(fd);
  return 0;
}
