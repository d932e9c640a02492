/* What the OSU-style benchmarks (osu_allreduce.c, osu_coll.c, osu_p2p.c) need of the
 * library they are built against, rlxcoll (default) or MPI (-DUSE_MPI),
 * so that both run identical work: start and stop, this rank and the
 * size, a barrier, the slowest rank's time, a clock. */
#ifndef OSU_LIB_H
#define OSU_LIB_H

#include <time.h>
#ifdef USE_MPI
#include <mpi.h>
#else
#include <rlxcoll/rlxcoll.h>
#endif

static int osu_rank, osu_size;

static inline double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

#ifdef USE_MPI
#define LIB "openmpi"
static int init(int *argc, char ***argv) {
  int rc = MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &osu_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &osu_size);
  return rc;
}
static inline double max_double(double v) {
  double m;
  MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}
static void barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }
static void fini(void) { MPI_Finalize(); }
#else
#define LIB "rlxcoll"
static int init(int *argc, char ***argv) {
  int rc = rlx_init(argc, argv);
  if (rc == RLX_OK) {
    osu_rank = rlx_comm_rank(rlx_comm_world());
    osu_size = rlx_comm_size(rlx_comm_world());
  }
  return rc;
}
static inline double max_double(double v) {
  double m;
  rlx_allreduce(&v, &m, 1, RLX_FLOAT64, RLX_MAX, rlx_comm_world());
  return m;
}
static void barrier(void) { rlx_barrier(rlx_comm_world()); }
static void fini(void) { rlx_finalize(); }
#endif

#endif
