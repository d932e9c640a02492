/* The model's own OpenCL kernels: only what CLBlast lacks. Every kernel
 * takes its element count and ignores work-items past it, so the global
 * size can be rounded up to the work-group size. */

/* z[r][j] += bias[j], then ReLU when relu != 0 (in place): the GEMM's
 * output is the layer's activation, one pass instead of two. */
__kernel void bias_act(__global float *z, __global const float *p, uint bias_off, uint cols,
                       int relu, uint n) {
  uint i = get_global_id(0);
  if (i >= n)
    return;
  float v = z[i] + p[bias_off + i % cols];
  z[i] = relu ? fmax(v, 0.0f) : v;
}

/* One row per work-item: softmax, cross-entropy, the right/wrong verdict
 * and, when dz is wanted, the mean loss's gradient (softmax - onehot)/norm
 * (norm: the rows whose mean it is, the batch's or, in a joint step, a
 * member's), all from one read of the logits. row_stats: each row's loss
 * and verdict side by side (rows x 2), which batch_stats adds up. */
__kernel void softmax_xent(__global const float *z, __global const int *y, uint rows,
                           uint classes, __global float *dz, int want_dz,
                           __global float *row_stats, uint norm) {
  uint r = get_global_id(0);
  if (r >= rows)
    return;
  __global const float *zr = z + (size_t)r * classes;
  uint best = 0;
  for (uint j = 1; j < classes; j++)
    if (zr[j] > zr[best])
      best = j;
  float m = zr[best], s = 0.0f;
  for (uint j = 0; j < classes; j++)
    s += exp(zr[j] - m);
  int t = y[r];
  row_stats[2 * r] = log(s) + m - zr[t];
  row_stats[2 * r + 1] = best == (uint)t ? 1.0f : 0.0f;
  if (want_dz) {
    __global float *d = dz + (size_t)r * classes;
    float inv = 1.0f / (s * (float)norm);
    for (uint j = 0; j < classes; j++)
      d[j] = exp(zr[j] - m) * inv - (j == (uint)t ? 1.0f / (float)norm : 0.0f);
  }
}

/* Back through a ReLU: zero the gradient where the output was clipped. */
__kernel void relu_back(__global float *d, __global const float *a, uint n) {
  uint i = get_global_id(0);
  if (i < n && !(a[i] > 0.0f))
    d[i] = 0.0f;
}

/* SGD with momentum, one pass: v = mu v + g; p -= lr v. */
__kernel void sgd(__global float *p, __global float *v, __global const float *g, float lr,
                  float mu, uint n) {
  uint i = get_global_id(0);
  if (i >= n)
    return;
  float u = mu * v[i] + g[i];
  v[i] = u;
  p[i] -= lr * u;
}

/* rlx_model_step_shared: acc = g (first), or acc + g; then times scale
 * (the last member's: 1 / members, exact for a power of two), so acc ends
 * ((g0 + g1) + g2 ...) / members in the members' order. */
__kernel void group_sum(__global float *acc, __global const float *g, uint n, uint first,
                        float scale) {
  uint i = get_global_id(0);
  if (i >= n)
    return;
  float v = first ? g[i] : acc[i] + g[i];
  acc[i] = scale != 0.0f ? v * scale : v;
}

/* rlx_model_step_shared of two members in one kernel: their average
 * (g0 + g1) / 2, as group_sum makes it, and each member's update from it,
 * as sgd makes it (the same operations in the same order: the same bits),
 * without the average ever stored. summed: g0 is already g0 + g1 (a
 * joint step's gradient), g1 is not read. */
__kernel void pair_update(__global const float *g0, __global const float *g1,
                          __global float *p0, __global float *v0, float lr0, float mu0,
                          __global float *p1, __global float *v1, float lr1, float mu1, uint n,
                          int summed) {
  uint i = get_global_id(0);
  if (i >= n)
    return;
  float a = summed ? g0[i] : g0[i] + g1[i];
  a = a * 0.5f;
  float u = mu0 * v0[i] + a;
  v0[i] = u;
  p0[i] -= lr0 * u;
  u = mu1 * v1[i] + a;
  v1[i] = u;
  p1[i] -= lr1 * u;
}

/* Half-width gradients (rlx_model_grad_half / _apply_half): g[off..off+n)
 * rounded to nearest even into h as IEEE half (bf16 0) or bfloat16 (1),
 * bit for bit as the host's conversion (lib/half.c) rounds; and back. */
__kernel void to_half(__global const float *g, __global half *h, uint off, uint n, uint bf16) {
  uint i = get_global_id(0);
  if (i >= n)
    return;
  float v = g[off + i];
  if (!bf16) {
    vstore_half_rte(v, off + i, h);
    return;
  }
  uint x = as_uint(v);
  ushort r;
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
    r = (ushort)((x >> 16) | 0x40u); /* NaN stays a quiet NaN */
  else
    r = (ushort)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
  ((__global ushort *)h)[off + i] = r;
}

__kernel void from_half(__global const half *h, __global float *g, uint n, uint bf16) {
  uint i = get_global_id(0);
  if (i >= n)
    return;
  g[i] = bf16 ? as_float((uint)((__global const ushort *)h)[i] << 16) : vload_half(i, h);
}

/* A bias's gradient: out[off + c] = the sum over the rows of column c of
 * m (parts x rows rows, cols columns). One work-group per column, its
 * work-items striding the rows, then a tree in local memory: every load
 * of the column is in flight at once (CLBlast's gemv took 17-25 us on the
 * H200 for a 1024-row batch; a work-item per column loops over every
 * row). parts > 1 (a joint step: a part each member's rows): each part
 * summed as alone, then the parts' sums added in order, as the members'
 * gradients are. */
__kernel void col_sums(__global const float *m, uint rows, uint cols, __global float *out,
                       uint off, __local float *l, uint parts) {
  uint c = get_group_id(0), lid = get_local_id(0), n = get_local_size(0);
  float total = 0.0f;
  for (uint p = 0; p < parts; p++) {
    __global const float *mp = m + (size_t)p * rows * cols;
    float s = 0.0f;
    for (uint r = lid; r < rows; r += n)
      s += mp[(size_t)r * cols + c];
    l[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = n / 2; h > 0; h >>= 1) {
      if (lid < h)
        l[lid] += l[lid + h];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    total = p == 0 ? l[0] : total + l[0];
    barrier(CLK_LOCAL_MEM_FENCE); /* (l[0] read before the next part writes it) */
  }
  if (lid == 0)
    out[off + c] = total;
}

/* The weight gradient of a layer with few outputs (at most SMALL_OUT: the
 * classifier's 10), g[woff + j * in + i] = sum over rows b of
 * dz[b][j] * a[b][i]. CLBlast gives such a product (10 x in, over the
 * batch) too little parallelism: 69 us for 10 x 256 over 1024 rows on the
 * H200. Here a work-group takes 8 inputs i, its work-items in lanes that
 * stride the rows, each holding every output's sum; a tree over the lanes
 * in local memory (8 x lanes x SMALL_OUT floats) ends it. SMALL_OUT
 * comes from opencl.c's build options. */
__kernel void wgrad_small(__global const float *dz, __global const float *a, uint rows, uint out,
                          uint in, __global float *g, uint woff, __local float *l, uint parts) {
  uint lid = get_local_id(0), ii = lid % 8, lane = lid / 8, lanes = get_local_size(0) / 8;
  uint i = get_group_id(0) * 8 + ii;
  float total[SMALL_OUT];
  for (uint p = 0; p < parts; p++) { /* (parts > 1: as col_sums) */
    float acc[SMALL_OUT];
#pragma unroll
    for (uint j = 0; j < SMALL_OUT; j++)
      acc[j] = 0.0f;
    if (i < in)
      for (uint b = lane; b < rows; b += lanes) {
        size_t row = (size_t)p * rows + b;
        float v = a[row * in + i];
        __global const float *d = dz + row * out;
#pragma unroll
        for (uint j = 0; j < SMALL_OUT; j++)
          if (j < out)
            acc[j] += d[j] * v;
      }
#pragma unroll
    for (uint j = 0; j < SMALL_OUT; j++)
      l[(j * lanes + lane) * 8 + ii] = acc[j];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = lanes / 2; h > 0; h >>= 1) {
      if (lane < h)
        for (uint j = 0; j < out; j++)
          l[(j * lanes + lane) * 8 + ii] += l[(j * lanes + lane + h) * 8 + ii];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
#pragma unroll
    for (uint j = 0; j < SMALL_OUT; j++)
      if (j < out) {
        float v = l[(j * lanes) * 8 + ii];
        total[j] = p == 0 ? v : total[j] + v;
      }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lane == 0 && i < in)
#pragma unroll
    for (uint j = 0; j < SMALL_OUT; j++)
      if (j < out)
        g[woff + (size_t)j * in + i] = total[j];
}

/* gemm_tiles' (and sum_parts') last touch on output (i, j) of n columns:
 * + ep[boff + j] when bias_on; relu 1: ReLU; relu 2: 0 where the layer's
 * output ep[boff + i n + j] is not positive (ReLU's backward, as
 * relu_back). */
float epilogue(float v, __global const float *ep, uint boff, int bias_on, int relu, uint i,
                      uint j, uint n) {
  if (bias_on)
    v += ep[boff + j];
  if (relu == 1)
    return fmax(v, 0.0f);
  if (relu == 2 && !(ep[boff + (size_t)i * n + j] > 0.0f))
    return 0.0f;
  return v;
}

/* C = A B over k, row-major C (m x n at c + coff, leading dimension n),
 * for the products CLBlast ran slowest on the H200 (4-9 TFLOP/s): A(i, k)
 * is a[k * lda + i] when a_k (k-major: a weight gradient's output gradient)
 * else a[i * lda + k]; B(k, j) is b[k * ldb + j] when b_k else
 * b[j * ldb + k] (a layer's weights, out x in, used transposed). Tiles of
 * TM x TN outputs (TM = WY x RM rows, TN = 16 x RN columns), 16 x WY
 * work-items each holding RM x RN of them (rows ty*RM.., columns 4 at a
 * time from tx*4, 64 apart: the work-items of a row then read consecutive
 * float4s of B, where 8 contiguous columns had two of them hit one bank:
 * RN 8 took 1.7x RM 8's time, now 1.05x), so that each k step reads its
 * A and B values from local memory as float4s; k taken CHUNK at a time
 * through local memory
 * (rows padded by 4, keeping float4s aligned, against bank conflicts when
 * a k-minor operand is stored transposed), the next chunk's global loads
 * issued before this chunk's multiply-adds. Every output is summed in k's
 * order whatever the tile, so the shapes give the same bits. (Double-
 * buffered local memory: slower on the H200,
 * bench/results/gemm-*-h200-2026-12-03.txt.) The k range may be split over
 * get_num_groups(2) groups (a small product has too few tiles to fill
 * the device): each then writes its partial tile to part, and sum_parts
 * adds them. Else the epilogue ends it here: bias (ep[boff + j], when
 * bias_on) and ReLU (relu 1: the forward pass's bias_act folded in), or
 * ReLU's backward (relu 2: zero where the layer's output ep[boff + i n +
 * j] was clipped, relu_back folded into the backward product). RM, RN, WY and CHUNK come from
 * opencl.c's build options. */
#if (RM != 4 && RM != 8) || (RN != 4 && RN != 8) || (WY != 8 && WY != 16) || \
    (CHUNK != 8 && CHUNK != 16 && CHUNK != 32) || (CHUNK * WY * RM) % (16 * WY) ||             \
    (CHUNK * 16 * RN) % (16 * WY)
#error "gemm_tiles: RM and RN 4 or 8, WY 8 or 16, CHUNK 8, 16 or 32"
#endif
#define TM (WY * RM)
#define TN (16 * RN)
#define NWI (16 * WY)              /* work-items in a group */
#define LOADS_A (CHUNK * TM / NWI) /* elements of each operand a work-item moves per chunk */
#define LOADS_B (CHUNK * TN / NWI)
#define LDA_L (TM + 4) /* a local row's length */
#define LDB_L (TN + 4)
/* Where each work-item's share of a chunk lies: element t of a work-item
 * is at k kk + t dk, row (or column) ii + t di of the tile: k-major
 * operands along the tile's row (consecutive work-items, consecutive
 * addresses), others along the CHUNK of k that one row holds
 * contiguously. Its value is at p + t step in global memory, p moving
 * CHUNK along k a chunk, and goes to s + t s_step in local memory (the
 * tile stored k-major, rows of ld_local). Worked out once, so that a load
 * costs an address add and its bound checks (the index arithmetic of both
 * layouts for every element, as before, took the big products 18-30%
 * longer on the H100; float4 loads, tried, were 4% slower again:
 * bench/results/gemm-addressing-h100-2026-12-06.txt). */
struct share {
  uint kk, ii, dk, di, s_step;
  size_t at, step, move; /* (at: element 0's offset from the operand's start) */
};

/* for the tile whose first row (or column) is r0, from k k0 */
struct share share_of(uint lid, int k_major, uint tile, uint r0, uint k0, uint ld_global,
                      uint ld_local) {
  struct share h;
  h.kk = k_major ? lid / tile : lid % CHUNK;
  h.ii = k_major ? lid % tile : lid / CHUNK;
  h.dk = k_major ? NWI / tile : 0;
  h.di = k_major ? 0 : NWI / CHUNK;
  h.at = k_major ? (size_t)(k0 + h.kk) * ld_global + r0 + h.ii
                 : (size_t)(r0 + h.ii) * ld_global + k0 + h.kk;
  h.step = (size_t)(k_major ? h.dk : h.di) * ld_global;
  h.move = k_major ? (size_t)CHUNK * ld_global : CHUNK;
  h.s_step = k_major ? h.dk * ld_local : h.di;
  return h;
}

/* Element t of the chunk at k0 (p: where element 0 of it is), 0 past k's
 * end or the operand's rows (or columns): r0 is the tile's first. */
float share_load(struct share h, __global const float *p, uint t, uint k0, uint k_end, uint r0,
                 uint rows) {
  return k0 + h.kk + t * h.dk < k_end && r0 + h.ii + t * h.di < rows ? p[t * h.step] : 0.0f;
}

__kernel __attribute__((reqd_work_group_size(16, WY, 1))) void gemm_tiles(
    __global const float *a, uint a_off, uint lda, int a_k, __global const float *b, uint b_off,
    uint ldb, int b_k, uint m, uint n, uint k, __global float *c, uint coff, __global float *part,
    uint k_per_split, __global const float *ep, uint boff, int bias_on, int relu) {
  __local float4 la4[CHUNK * LDA_L / 4], lb4[CHUNK * LDB_L / 4];
  __local float *la = (__local float *)la4, *lb = (__local float *)lb4;
  uint tx = get_local_id(0), ty = get_local_id(1), lid = ty * 16 + tx;
  uint j0 = get_group_id(0) * TN, i0 = get_group_id(1) * TM, z = get_group_id(2);
  uint k_start = z * k_per_split, k_end = min(k, k_start + k_per_split);
  struct share ha = share_of(lid, a_k, TM, i0, k_start, lda, LDA_L),
               hb = share_of(lid, b_k, TN, j0, k_start, ldb, LDB_L);
  __global const float *pa = a + a_off + ha.at, *pb = b + b_off + hb.at;
  __local float *sa = la + ha.kk * LDA_L + ha.ii, *sb = lb + hb.kk * LDB_L + hb.ii;
  float acc[RM][RN], ra[LOADS_A], rb[LOADS_B];
#pragma unroll
  for (uint r = 0; r < RM; r++)
#pragma unroll
    for (uint q = 0; q < RN; q++)
      acc[r][q] = 0.0f;
  /* the chunk at k0 from global memory into registers */
#define FETCH(k0)                                                                          \
  for (uint t = 0; t < LOADS_A; t++)                                                       \
    ra[t] = share_load(ha, pa, t, k0, k_end, i0, m);                                       \
  for (uint t = 0; t < LOADS_B; t++)                                                       \
    rb[t] = share_load(hb, pb, t, k0, k_end, j0, n);
  FETCH(k_start)
  for (uint k0 = k_start; k0 < k_end; k0 += CHUNK) {
#pragma unroll
    for (uint t = 0; t < LOADS_A; t++)
      sa[t * ha.s_step] = ra[t];
#pragma unroll
    for (uint t = 0; t < LOADS_B; t++)
      sb[t * hb.s_step] = rb[t];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (k0 + CHUNK < k_end) { /* in flight while this chunk computes */
      pa += ha.move;
      pb += hb.move;
      FETCH(k0 + CHUNK)
    }
#pragma unroll
    for (uint kk = 0; kk < CHUNK; kk++) {
      float av[RM], bv[RN];
#pragma unroll
      for (uint v = 0; v < RM / 4; v++) {
        float4 f = la4[kk * (LDA_L / 4) + ty * (RM / 4) + v];
        av[4 * v] = f.s0, av[4 * v + 1] = f.s1, av[4 * v + 2] = f.s2, av[4 * v + 3] = f.s3;
      }
      /* (a work-item's columns 4 at a time, 64 apart: the work-items of
       * a row read consecutive float4s) */
#pragma unroll
      for (uint v = 0; v < RN / 4; v++) {
        float4 f = lb4[kk * (LDB_L / 4) + v * 16 + tx];
        bv[4 * v] = f.s0, bv[4 * v + 1] = f.s1, bv[4 * v + 2] = f.s2, bv[4 * v + 3] = f.s3;
      }
#pragma unroll
      for (uint r = 0; r < RM; r++)
#pragma unroll
        for (uint q = 0; q < RN; q++)
          acc[r][q] = fma(av[r], bv[q], acc[r][q]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
#undef FETCH
  int split = get_num_groups(2) > 1;
  __global float *dst = split ? part + (size_t)z * m * n : c + coff;
#pragma unroll
  for (uint r = 0; r < RM; r++)
#pragma unroll
    for (uint q = 0; q < RN; q++) {
      uint i = i0 + ty * RM + r, j = j0 + q / 4 * 64 + tx * 4 + q % 4;
      if (i < m && j < n)
        dst[(size_t)i * n + j] = split ? acc[r][q] : epilogue(acc[r][q], ep, boff, bias_on, relu, i, j, n);
    }
}

/* c[coff + e] = the sum of gemm_tiles' partial products at e (e < m x n,
 * n columns), then its epilogue as gemm_tiles would have. The splits in
 * groups of group (all of them in one, but in a joint step's weight
 * gradient: a group each member's rows): each group summed as alone, then
 * the groups' sums added in order, as the members' gradients are. */
__kernel void sum_parts(__global const float *part, uint splits, uint mn, uint n,
                        __global float *c, uint coff, __global const float *ep, uint boff,
                        int bias_on, int relu, uint group) {
  uint e = get_global_id(0);
  if (e >= mn)
    return;
  float total = 0.0f;
  for (uint z0 = 0; z0 < splits; z0 += group) {
    float s = 0.0f;
    for (uint z = z0; z < z0 + group; z++)
      s += part[(size_t)z * mn + e];
    total = z0 == 0 ? s : total + s;
  }
  c[coff + e] = epilogue(total, ep, boff, bias_on, relu, e / n, e % n, n);
}

/* rlx_model_data_batch: rows [0, total / dim) of the batch from the
 * training set kept on the device, row r the example order[first + r *
 * stride], its bytes widened through lut (the host's rlx_dataset_batch
 * values, so the batch is bit for bit the host's), its label as an int;
 * into x and y from row row0 (a joint step's member's part). */
__kernel void gather_batch(__global const uchar *pix, __global const uchar *lab,
                           __global const uint *order, uint first, uint stride, uint dim,
                           __global const float *lut, uint total, __global float *x,
                           __global int *y, uint row0) {
  uint i = get_global_id(0);
  if (i >= total)
    return;
  uint r = i / dim, j = i - r * dim;
  uint e = order[first + r * stride];
  x[(size_t)row0 * dim + i] = lut[pix[(size_t)e * dim + j]];
  if (j == 0)
    y[row0 + r] = lab[e];
}

/* The batch's loss and right answers: stats[c] = the sum over the rows
 * of row_stats' column c (rows x 2 from row first), summed as col_sums sums a column
 * (one work-group: its work-items striding the rows, then a tree in local
 * memory l, 2 x its size); then, when add, added to the run's totals kept
 * on the device until the host asks: the loss with a compensation term
 * (Kahan), so an epoch's sum loses nothing to float's 24 bits; the count
 * is exact in a float up to 2^24. */
__kernel void batch_stats(__global const float *row_stats, uint rows, __global float *stats,
                          __global float *tot, int add, __local float *l, uint first) {
  uint lid = get_local_id(0), n = get_local_size(0);
  row_stats += 2 * (size_t)first; /* (a joint step: this member's rows) */
  float s0 = 0.0f, s1 = 0.0f;
  for (uint r = lid; r < rows; r += n) {
    s0 += row_stats[2 * (size_t)r];
    s1 += row_stats[2 * (size_t)r + 1];
  }
  l[lid] = s0;
  l[n + lid] = s1;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint h = n / 2; h > 0; h >>= 1) {
    if (lid < h) {
      l[lid] += l[lid + h];
      l[n + lid] += l[n + lid + h];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid != 0)
    return;
  stats[0] = l[0];
  stats[1] = l[n];
  if (add) {
    float y = l[0] - tot[2], t = tot[0] + y;
    tot[2] = (t - tot[0]) - y;
    tot[0] = t;
    tot[1] += l[n];
  }
}
