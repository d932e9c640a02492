/* Every measured tuning constant of the data path in one place: segment
 * sizes, pipeline lanes, algorithm crossovers, the by-reference threshold.
 * Each says what measured it; rerun that script on a new machine before
 * changing a number (README "Benchmarks"). Protocol limits (frame sizes,
 * heartbeats, handshake deadlines) live with their protocol, not here. */
#ifndef RLX_TUNING_H
#define RLX_TUNING_H

/* ---- by-reference payloads (lib/transport/cma.c) --------------------------
 * Same-host payloads from this size go by reference (one copy, made by the
 * receiver with process_vm_readv) instead of through the socket (two
 * copies, through the kernel's buffer). bench/crossover.sh on 16 cores with
 * a build of -DRLX__CMA_MIN=32768, and bench/ab_allreduce.sh with OSU= on
 * 2 cores: a lower threshold made latency-bound sizes slower (2 ranks,
 * 32 KiB 9.8 -> 20.4 us, 64 KiB 18.6 -> 31.3) while frames went through
 * the socket. Since they go through the shared-memory rings, 64 KiB: on
 * the lent 16-core Xeon (model 207, 16 interleaved rounds, session 44)
 * the 64-message window of 64 KiB went from 1.40x vader to 0.98 and the
 * ping-pong from 1.04 to 0.55 (two copies through the ring against one by
 * reference, as vader's); on the 2-core EPYC 0.81 -> 0.99 and 0.91 ->
 * 1.07, the other sizes unchanged
 * (bench/results/cma-min-64k-2026-12-06.txt). */
#ifndef RLX__CMA_MIN /* -DRLX__CMA_MIN=... to measure another threshold */
#define RLX__CMA_MIN (64u * 1024u)
#endif
/* From this size a message by reference is copied by both sides at once:
 * the receiver reads the first half while the sender, asked, writes the
 * second into the receive's buffer (process_vm_writev), as a shared-memory
 * transport copying in and out keeps both cores busy. One process copying
 * alone took 64 MiB 15.0 ms one way on 16 cores (vader's copy-in/copy-out
 * there: 8-11 ms). */
#ifndef RLX__CMA_SPLIT_MIN
#define RLX__CMA_SPLIT_MIN (2u * 1024u * 1024u)
#endif
/* A message sent by reference before its receive is posted stays in the
 * sender's memory this long (its send not complete) for the receive to
 * copy it straight into its buffer, MPI's rendezvous; then the receiver
 * copies it into a buffer of its own and lets the sender go, so that a
 * program which counts on a send completing without its receive (as an
 * eager protocol would) still runs. Copying at once cost a ping-pong of
 * 64 MiB 5.0x vader's time on 2 cores (two copies, and a fresh buffer's
 * page faults every message); bench/p2p_vs_vader.sh. RLX_CMA_HOLD_MS
 * overrides it. */
#define RLX__CMA_HOLD_MS 1
/* A collective that ends (revoked, failed) with sends by reference its
 * receivers have not acknowledged waits this long for them (a live
 * receiver reads a collective's frame as it comes and acknowledges),
 * then drops those peers (lib/coll/exec.c). */
#define RLX__DRAIN_MS 2000

/* ---- shared-memory rings (lib/transport/shm.c) -----------------------------
 * Each way between two ranks of a host. Payloads from RLX__CMA_MIN go by
 * reference and put only a descriptor in the ring, so a ring holds a
 * whole frame below that size several times over. Each ring 1 MiB while a host runs at most RLX__SHM_RING_BIG_RANKS ranks
 * (2 MiB of shared memory per pair that talks, touched as it is used:
 * 30 MiB per rank at 16 ranks all talking), 256 KiB beyond. On 16 cores
 * (bench/results/shm-ring-size-h200-2026-12-04.txt) 1 MiB against 256 KiB
 * took a 64-message window of 32 KiB from 1.35 to 1.17x vader and of
 * 64 KiB from 1.61 to 1.38x, the other sizes the same or better. */
#define RLX__SHM_RING_BIG_RANKS 16
#ifndef RLX__SHM_RING_BYTES
#define RLX__SHM_RING_BYTES (1024u * 1024u)
#endif
#ifndef RLX__SHM_RING_BYTES_MANY
#define RLX__SHM_RING_BYTES_MANY (256u * 1024u)
#endif

/* ---- ring segments (allreduce_ring.c, reduce_scatter_ring.c,
 * allgather_ring.c) -----------------------------------------------------------
 * Through the socket, 256 KiB keeps a segment inside the kernel's buffers;
 * by reference there is no buffer to fit, and fewer, bigger segments save
 * acknowledgements (2 ranks, 1 MiB: 178-186 us with 1 MiB segments against
 * 193-298 us with 256 KiB). When ranks outnumber cores a segment often
 * arrives before its receive is posted and is staged, and 512 KiB keeps
 * that copy in the cache (bench/ab_allreduce.sh, one build per segment
 * size; 4 ranks on 2 cores: 4 MiB 2523 against 3399 us, 16 MiB 9917
 * against 12734; 256 KiB segments: 2608, 10698). */
#define RLX__RING_SEG (256u * 1024u)
#define RLX__RING_SEG_CMA (1024u * 1024u)
#define RLX__RING_SEG_CMA_OVERSUBSCRIBED (512u * 1024u)
/* Allgather has no reduction to overlap: 1 MiB segments only bound the
 * frame size and the receive's granularity. */
#define RLX__ALLGATHER_SEG (1024u * 1024u)

/* Two lanes once a chunk has 8 segments or more, unless same-host payloads
 * go by reference: measured on 16 cores (bench/crossover.sh), by-reference
 * copies with one lane beat the socket either way, while two lanes of
 * by-reference copies were up to 2x slower at 16-64 MiB; on 2 cores two
 * lanes over the socket were neutral at 4-16 MiB and worse at 1-2 MiB. */
#define RLX__RING_LANES 2
#define RLX__RING_LANES_FROM 8

/* A binomial broadcast cuts only to keep frames far below the frame limit
 * (1 GiB): the tree is latency-bound, and segments would add rounds. */
#define RLX__BCAST_SEG (64u * 1024u * 1024u)
/* A block of an uneven call (rlx_alltoallv, ...) is at most this: its
 * rounds key 16 segments a block (lib/coll/uneven.c). */
#define RLX__UNEVEN_BLOCK_MAX (16ull * RLX__BCAST_SEG)

/* ---- algorithm crossovers (select.c), bytes of the whole vector ----------
 * bench/crossover.sh (every algorithm forced, per size): on 2 cores,
 * recursive doubling wins up to 32 KiB; on 2 ranks halving-doubling and
 * the ring exchange the same halves and the ring's segments win from
 * 256 KiB. With more ranks the ring's 2(p-1) rounds cost more against
 * halving-doubling's 2 lg p, so the crossover grows with p: on 16 cores
 * (bench/results/crossover-h200-2026-11-30.txt) halving-doubling won up to
 * 256 KiB on 4 ranks (ring from 512 KiB: 215 against 220 us), up to 512 KiB
 * on 8 (369 against 541; ring at 1 MiB 654 against 686) and up to 1 MiB on
 * 16 (988 against 1477; ring at 2 MiB 1729 against 2029): 64 KiB per
 * rank, 256 KiB at least. */
#define RLX__AR_RD_MAX (32u * 1024u)
#define RLX__AR_RABENSEIFNER_MAX_2 (128u * 1024u)
#define RLX__AR_RABENSEIFNER_PER_RANK (64u * 1024u)
#define RLX__AR_RABENSEIFNER_MIN_MAX (256u * 1024u)
/* bench/crossover.sh-style sweeps of rlx-bench -C bcast / allgather with
 * RLX_BCAST_ALGO / RLX_ALLGATHER_ALGO forced, 2 cores, n = 2..8. */
#define RLX__BCAST_BINOMIAL_MAX (512u * 1024u)
#define RLX__AG_RD_MAX (64u * 1024u) /* recursive doubling (power-of-two p) */
/* Bruck's from 5 ranks (3 rounds against the ring's 4) up to 32 KiB in
 * all: at 3 both take 2 rounds and the ring was 1.3-2x faster (2 cores);
 * on 16 cores (rlx-bench -C allgather, RLX_SHM_COLL=off, 3 runs, session
 * 18) Bruck's took 0.85-1.1x the ring's time at 5 ranks up to 8 KiB and
 * 1.0-1.1x at 32 KiB, 0.6-0.8x at 7 and 9 ranks, 0.4-0.6x at 15; at
 * 128 KiB 1.1-1.2x at 5 ranks. */
#define RLX__AG_BRUCK_FROM 5
#define RLX__AG_BRUCK_MAX (32u * 1024u)

/* ---- collectives in a communicator's shared segment (the _shm.c files) ---
 * A data slot per rank and parity, and the chunk a step moves. Flat (every
 * rank reduces every rank's data: one wait) while n x bytes is at most
 * FLAT_READ, up to FLAT_MAX; above it in chunks of n x CHUNK_PER_RANK (at
 * least CHUNK_MIN, at most a slot), each rank reducing its slice (two
 * waits). bench/shm_vs_vader.sh on 16 cores (bench/results/
 * shm-coll-h200-2026-12-01.txt): flat at n = 16 took 12.0 us at 4 KiB and
 * 20.8 at 8 KiB where the sliced steps took 12.8 at 16 KiB; at n = 8 flat
 * 6.9 us at 4 KiB, 11.9 at 8 KiB, sliced 10.7 at 16 KiB; on 2 cores, n = 2
 * flat 2.3 us at 8 KiB, sliced 4.7 at 16 KiB. */
#define RLX__SHMG_SLOT (256u * 1024u)
#define RLX__SHMG_FLAT_READ (32u * 1024u)
#define RLX__SHMG_FLAT_MAX (8u * 1024u)
#define RLX__SHMG_CHUNK_PER_RANK (16u * 1024u)
#define RLX__SHMG_CHUNK_MIN (64u * 1024u)
/* On 2 ranks the point-to-point algorithms, whose by-reference copies
 * move fewer bytes than posting, reducing and copying out, win from
 * 256 KiB (2 cores: 1 MiB 145 us against 181 in shared memory; on 4 and
 * more ranks shared memory won at every size, up to 0.6x). */
#define RLX__SHMG_P2P_FROM_2 (256u * 1024u)
/* Gather, scatter and all-to-all (exchange_shm.c) in the segment: gather
 * at every size, scatter while the root's p blocks are at most
 * SCATTER_MAX, all-to-all while a rank's p blocks are at most
 * ALLTOALL_MAX; above, point to point (linear, pairwise; large blocks by
 * reference). bench/shm_vs_vader.sh COLL=... on 16 cores, n = 2..16
 * (session 25; bench/results/coll-shm-h200-2026-12-03.txt): gather in the
 * segment 0.9-1.2x vader up to 4 MiB in all where point to point took
 * 1.7-4.5x above it; all-to-all in the segment 0.2-0.9x vader up to 64
 * KiB in all and behind pairwise from 128-256 KiB (at n = 16, 256 KiB
 * blocks: 9.8 ms against 2.1); scatter alike either way above 4 MiB. */
/* Pairwise all-to-all runs two steps a round up to this block size: on 16
 * cores 0.65-0.9x the time of one step a round at 64-256 KiB blocks and
 * n = 4-16, but 1.3-1.8x from 512 KiB-2 MiB (many by-reference copies at
 * once); bench/results/a2a-steps-h200-2026-12-03.txt. */
#define RLX__A2A_TWO_STEPS_MAX (256u * 1024u)
#define RLX__SHMG_SCATTER_MAX (4u * 1024u * 1024u)
/* ... and from blocks of this many bytes the segment's scatter runs as
 * scatterv does (scatterv_shm.c): every receiver reads its block from the
 * root's buffer by reference at once (with RLX_CMA on), where the root
 * posted every chunk through its slots for all to copy out. 2 cores,
 * ratio to vader, medians of 5 rounds
 * (bench/results/scatter-by-ref-2core-2026-12-06.txt): 3-4 ranks
 * 128 KiB - 1 MiB 0.71-1.20 against 0.98-1.76 through the slots, 16-64
 * KiB alike (0.30-0.66 against 0.21-0.62); 2 ranks 128-256 KiB 0.58-0.81
 * against 0.70-1.10, 512 KiB - 1 MiB 1.07-1.24 against 0.97-1.01 (the
 * slots' two copies, one on each core, win there on this machine); but
 * on the lent 16-core host (Xeon model 207, 5 rounds) 2 ranks 512 KiB -
 * 2 MiB 0.65-0.88 by reference against 1.11-1.19 through the slots
 * (bench/results/all-calls-session43-16core-model207-2026-12-06.txt),
 * so by reference at every rank count. -DRLX__SHMG_SCATTER_REF_FROM=...
 * to measure. */
#ifndef RLX__SHMG_SCATTER_REF_FROM
#define RLX__SHMG_SCATTER_REF_FROM (128u * 1024u)
#endif
#define RLX__SHMG_ALLTOALL_MAX (128u * 1024u)
/* The segment's alltoallv (and rlx_alltoall above RLX__SHMG_ALLTOALL_MAX)
 * has its receivers read blocks of at least this many bytes from the
 * senders' buffers (process_vm_readv) instead of streaming them through
 * the slots: no acknowledgement per block there, so less than the
 * messages' RLX__CMA_MIN pays. On 16 cores 16 KiB against 128, 64 and
 * 32 KiB (n = 4-16, 4-512 KiB blocks): rlxcoll/vader 1.27 at worst
 * against 2.25 for 128 KiB (bench/results/a2a-ref-min-h200-2026-12-04.txt).
 * Each receiver reads from its right-hand neighbour on: all starting at
 * rank 0 made 8-16 ranks at 64-256 KiB 1.07-1.37x vader, staggered
 * 0.49-0.78 (bench/results/alltoall-stagger-16core-h100host-2026-12-06.txt).
 * -DRLX__SHMG_REF_MIN=... to measure. */
#ifndef RLX__SHMG_REF_MIN
#define RLX__SHMG_REF_MIN (16u * 1024u)
#endif
/* The segment's allgather and allgatherv read every block from its
 * owner's buffer (process_vm_readv) once the largest is at least this
 * many bytes; below, the slots (one copy in that all readers share, one
 * out each). Each rank starts with its right-hand neighbour's block: on
 * 16 cores, every rank reading rank 0's first made 8-16 ranks at 256 KiB
 * - 2 MiB 1.0-1.54x vader, staggered 0.51-0.78 (slots 0.65-0.97;
 * bench/results/allgather-stagger-16core-h100host-2026-12-06.txt).
 * -DRLX__SHMG_AG_REF_MIN=... to measure. */
#ifndef RLX__SHMG_AG_REF_MIN
#define RLX__SHMG_AG_REF_MIN (256u * 1024u)
#endif
/* The segment's gatherv: a sender whose block goes by reference writes
 * it into the root's buffer itself (process_vm_writev) where the root
 * would read the blocks one after another, once there are other senders
 * to copy beside it (more than 2 ranks) or its block is at least this
 * many bytes. 2 ranks on this 2-core machine, rlxcoll/vader medians of
 * 9 rounds: 128-256 KiB 0.78-0.81 pushed against 0.59-0.63 read by the
 * root, 512 KiB - 4 MiB 0.87-0.90 against 0.99-1.07; 3 and 4 ranks
 * (oversubscribed), 5 rounds: 128-256 KiB 0.48-0.99 against 0.68-0.93,
 * 512 KiB - 4 MiB 0.56-0.86 against 0.86-1.63.
 * -DRLX__SHMG_PUSH_MIN=... to measure. */
#ifndef RLX__SHMG_PUSH_MIN
#define RLX__SHMG_PUSH_MIN (512u * 1024u)
#endif
/* The blocking calls' scratch that a job of one rank that may grow, and
 * every joiner, make and touch at rlx_init (comm.c): a 2-rank ring's
 * receive segments by reference, two lanes. */
#define RLX__GROW_SCRATCH (2u * 1024u * 1024u)
/* How long after rlx_comm_grow's welcome a caller leaving a wait wakes the
 * napping progress thread for the joiners' connections (engine.h): their
 * dial and handshake take milliseconds (an admission 3-4 steps, ~5 ms, on
 * 16 cores); past it the thread still answers within its 5 ms nap. */
#define RLX__GROW_WAKE_NS (1000ull * 1000000ull)

#endif
