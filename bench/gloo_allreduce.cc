// The OSU-style allreduce sweep of bench/osu_allreduce.c, against Gloo's TCP
// transport (Debian's libgloo-dev), for side-by-side comparison. Launch with
// rlxrun, which sets RLX_RANK and RLX_SIZE; ranks meet through a FileStore.
//   rlxrun -n 4 bench/gloo_allreduce STORE_DIR [max_bytes]
// Prints "gloo bytes avg_us" per size (the slowest rank's average).
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

static double now_us() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char **argv) {
  if (argc < 2 || !getenv("RLX_RANK") || !getenv("RLX_SIZE")) {
    fprintf(stderr, "usage: rlxrun -n N gloo_allreduce STORE_DIR [max_bytes]\n");
    return 2;
  }
  int rank = atoi(getenv("RLX_RANK")), size = atoi(getenv("RLX_SIZE"));
  size_t max_bytes = argc > 2 ? strtoull(argv[2], nullptr, 10) : (64u << 20);
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(argv[1]);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
  ctx->connectFullMesh(store, dev);
  std::vector<float> buf(max_bytes / 4), out(max_bytes / 4);
  for (size_t i = 0; i < buf.size(); i++)
    buf[i] = (float)(i % 1000) * 0.5f;
  auto run = [&](size_t n) {
    gloo::AllreduceOptions opts(ctx);
    opts.setInput(buf.data(), n);
    opts.setOutput(out.data(), n);
    opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    void (*fn)(void *, const void *, const void *, size_t) = &gloo::sum<float>;
    opts.setReduceFunction(fn);
    gloo::allreduce(opts);
  };
  for (size_t bytes = 8; bytes <= max_bytes; bytes *= 2) {
    size_t n = bytes / 4;
    long iters = (long)((256u << 20) / bytes);
    iters = iters > 2000 ? 2000 : iters < 5 ? 5 : iters;
    for (long i = 0; i < iters / 10 + 2; i++)
      run(n);
    gloo::BarrierOptions bo(ctx);
    gloo::barrier(bo);
    double t0 = now_us();
    for (long i = 0; i < iters; i++)
      run(n);
    double avg = (now_us() - t0) / (double)iters;
    // slowest rank's average: allreduce-max the timing itself
    std::vector<double> t{avg}, tmax{0};
    gloo::AllreduceOptions mo(ctx);
    mo.setInput(t.data(), 1);
    mo.setOutput(tmax.data(), 1);
    void (*mx)(void *, const void *, const void *, size_t) = &gloo::max<double>;
    mo.setReduceFunction(mx);
    gloo::allreduce(mo);
    if (rank == 0)
      printf("gloo %zu %.2f\n", bytes, tmax[0]);
    fflush(stdout);
  }
  return 0;
}
