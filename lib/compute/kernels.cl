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
 * and, when dz is wanted, the mean loss's gradient (softmax - onehot)/rows,
 * all from one read of the logits. */
__kernel void softmax_xent(__global const float *z, __global const int *y, uint rows,
                           uint classes, __global float *dz, int want_dz,
                           __global float *row_loss, __global float *row_ok) {
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
  row_loss[r] = log(s) + m - zr[t];
  row_ok[r] = best == (uint)t ? 1.0f : 0.0f;
  if (want_dz) {
    __global float *d = dz + (size_t)r * classes;
    float inv = 1.0f / (s * (float)rows);
    for (uint j = 0; j < classes; j++)
      d[j] = exp(zr[j] - m) * inv - (j == (uint)t ? 1.0f / (float)rows : 0.0f);
  }
}

/* Sum the per-row losses and verdicts: one work-group, a strided pass
 * then a tree in local memory. stats[0] = loss sum, stats[1] = right. */
__kernel void sum_rows(__global const float *row_loss, __global const float *row_ok, uint rows,
                       __global float *stats, __local float *l1, __local float *l2) {
  uint lid = get_local_id(0), n = get_local_size(0);
  float a = 0.0f, b = 0.0f;
  for (uint i = lid; i < rows; i += n) {
    a += row_loss[i];
    b += row_ok[i];
  }
  l1[lid] = a;
  l2[lid] = b;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = n / 2; s > 0; s >>= 1) {
    if (lid < s) {
      l1[lid] += l1[lid + s];
      l2[lid] += l2[lid + s];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    stats[0] = l1[0];
    stats[1] = l2[0];
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

/* A bias's gradient: out[off + c] = the sum over the batch's rows of
 * column c of m (rows x cols). One work-group per column, its work-items
 * striding the rows, then a tree in local memory: every load of the
 * column is in flight at once (CLBlast's gemv took 17-25 us on the H200
 * for a 1024-row batch; a work-item per column loops over every row). */
__kernel void col_sums(__global const float *m, uint rows, uint cols, __global float *out,
                       uint off, __local float *l) {
  uint c = get_group_id(0), lid = get_local_id(0), n = get_local_size(0);
  float s = 0.0f;
  for (uint r = lid; r < rows; r += n)
    s += m[(size_t)r * cols + c];
  l[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint h = n / 2; h > 0; h >>= 1) {
    if (lid < h)
      l[lid] += l[lid + h];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0)
    out[off + c] = l[0];
}

/* The weight gradient of a layer with few outputs (at most SMALL_OUT: the
 * classifier's 10), g[woff + j * in + i] = sum over rows b of
 * dz[b][j] * a[b][i]. CLBlast gives such a product (10 x in, over the
 * batch) too little parallelism: 69 us for 10 x 256 over 1024 rows on the
 * H200. Here a work-group takes 8 inputs i, its work-items in lanes that
 * stride the rows, each holding every output's sum; a tree over the lanes
 * in local memory (8 x lanes x SMALL_OUT floats) ends it. */
#define SMALL_OUT 16
__kernel void wgrad_small(__global const float *dz, __global const float *a, uint rows, uint out,
                          uint in, __global float *g, uint woff, __local float *l) {
  uint lid = get_local_id(0), ii = lid % 8, lane = lid / 8, lanes = get_local_size(0) / 8;
  uint i = get_group_id(0) * 8 + ii;
  float acc[SMALL_OUT];
#pragma unroll
  for (uint j = 0; j < SMALL_OUT; j++)
    acc[j] = 0.0f;
  if (i < in)
    for (uint b = lane; b < rows; b += lanes) {
      float v = a[(size_t)b * in + i];
      __global const float *d = dz + (size_t)b * out;
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
  if (lane == 0 && i < in)
    for (uint j = 0; j < out; j++)
      g[woff + (size_t)j * in + i] = l[(j * lanes) * 8 + ii];
}

/* A weight gradient too wide for wgrad_small, g = dz^T a over the rows
 * (dz rows x out, a rows x in, both row-major; g out x in): CLBlast's
 * transposed product ran at 4 TFLOP/s on the H200 against 8-9 for the
 * forward ones. Tiles of TILE x TILE outputs, 16 x 16 work-items each
 * holding 4 x 4 of them (strided by 16: conflict-free local reads), the
 * rows taken CHUNK at a time through local memory in coalesced row
 * segments. The rows may be split over get_num_groups(2) groups (a small
 * layer has too few tiles to fill the device): each then writes its
 * partial tile to part, and sum_parts adds them up. */
#define TILE 64
#define CHUNK 16
__kernel __attribute__((reqd_work_group_size(16, 16, 1))) void wgrad_tiles(
    __global const float *dz, __global const float *a, uint rows, uint out, uint in,
    __global float *g, uint woff, __global float *part, uint rows_per_split) {
  __local float ld[CHUNK][TILE];
  __local float la[CHUNK][TILE];
  uint tx = get_local_id(0), ty = get_local_id(1), lid = ty * 16 + tx;
  uint i0 = get_group_id(0) * TILE, o0 = get_group_id(1) * TILE, z = get_group_id(2);
  uint b_start = z * rows_per_split, b_end = min(rows, b_start + rows_per_split);
  float acc[4][4];
  for (uint r = 0; r < 4; r++)
    for (uint c = 0; c < 4; c++)
      acc[r][c] = 0.0f;
  for (uint b0 = b_start; b0 < b_end; b0 += CHUNK) {
    for (uint k = 0; k < 4; k++) {
      uint e = lid + k * 256, bb = e / TILE, cc = e % TILE, b = b0 + bb;
      ld[bb][cc] = b < b_end && o0 + cc < out ? dz[(size_t)b * out + o0 + cc] : 0.0f;
      la[bb][cc] = b < b_end && i0 + cc < in ? a[(size_t)b * in + i0 + cc] : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint bb = 0; bb < CHUNK; bb++) {
      float dv[4], av[4];
      for (uint r = 0; r < 4; r++)
        dv[r] = ld[bb][ty + 16 * r];
      for (uint c = 0; c < 4; c++)
        av[c] = la[bb][tx + 16 * c];
      for (uint r = 0; r < 4; r++)
        for (uint c = 0; c < 4; c++)
          acc[r][c] = fma(dv[r], av[c], acc[r][c]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  __global float *dst = get_num_groups(2) > 1 ? part + (size_t)z * out * in : g + woff;
  for (uint r = 0; r < 4; r++)
    for (uint c = 0; c < 4; c++) {
      uint o = o0 + ty + 16 * r, i = i0 + tx + 16 * c;
      if (o < out && i < in)
        dst[(size_t)o * in + i] = acc[r][c];
    }
}

/* g[woff + e] = the sum of wgrad_tiles' splits partial tiles at e. */
__kernel void sum_parts(__global const float *part, uint splits, uint n, __global float *g,
                        uint woff) {
  uint e = get_global_id(0);
  if (e >= n)
    return;
  float s = 0.0f;
  for (uint z = 0; z < splits; z++)
    s += part[(size_t)z * n + e];
  g[woff + e] = s;
}
