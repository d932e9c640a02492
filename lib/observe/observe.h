/* lib/observe, above base only. Seeing what a rank does: the timeline
 * trace (trace.c, RLX_TRACE), the flight recorder of recent calls
 * (flight.c, always on) and run statistics (stats.c, RLX_STATS). Like
 * logging, these sit below everything else: any floor above may report to
 * them, giving names and descriptions as data (they know no call). */
#ifndef RLX_OBSERVE_H
#define RLX_OBSERVE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* ---- timeline (trace.c) ---------------------------------------------------- */

/* Tracks (Chrome trace "threads") of a rank: its calls, its connection
 * set-up, then one per transfer slot of each lane of an algorithm, so the
 * waits of one round sit side by side and rounds follow each other. */
enum { RLX__TRACK_CALLS = 0, RLX__TRACK_CONNECT = 1, RLX__TRACK_XFER0 = 2 };
#define RLX__TRACK_XFER(lane, slot) (RLX__TRACK_XFER0 + (lane) * 4 + (slot))

/* Nonzero while RLX_TRACE is recording; read on hot paths with a relaxed
 * load (no fence), so tracing off costs one predictable branch. */
extern atomic_int rlx__trace_on;
#define RLX__TRACING() atomic_load_explicit(&rlx__trace_on, memory_order_relaxed)

/* Start recording into "<prefix>.<rank>" (Chrome trace-event JSON, one
 * event per line). clock_offset_ns is this host's realtime clock minus the
 * reference clock (the rendezvous'), subtracted from every timestamp.
 * Returns RLX_OK or an error naming the file. */
int rlx__trace_open(const char *prefix, int rank, int size, int64_t clock_offset_ns);
/* A span from t0 to t1 (rlx__now_ns values) on a track; args is the inside
 * of a JSON object ("\"bytes\":8"), or NULL. Names and args must need no
 * JSON escaping (they are ours). Thread-safe. */
void rlx__trace_span(int track, const char *cat, const char *name, uint64_t t0, uint64_t t1,
                     const char *args);
/* Write what is buffered, the track names, and close the file. */
void rlx__trace_close(void);

/* ---- flight recorder (flight.c) ---------------------------------------------- */

/* How a recorded call reads in the record ("rlx_allreduce(count=4,
 * float32, sum)"): given by the layer that knows the calls (lib/coll), so
 * the recorder keeps numbers, not their meaning. */
typedef void (*rlx__flight_describe_fn)(char *buf, size_t len, const char *call, int kind, int dt,
                                        int op, int root, unsigned long long count);
/* Keep the last n calls (RLX_FLIGHT; 0 keeps none). */
int rlx__flight_init(int n, int dump_on_error, int rank, rlx__flight_describe_fn describe);
void rlx__flight_fini(void);
/* A call starts at now (rlx__now_ns) after its sequence number is drawn;
 * returns a ticket for rlx__flight_leave. call and algo are static strings. */
uint64_t rlx__flight_enter(uint32_t comm_id, uint64_t seq, int kind, const char *call, int dt,
                           int op, int root, unsigned long long count, const char *algo,
                           uint64_t now);
void rlx__flight_leave(uint64_t ticket, int status, uint64_t now);
/* Write the record to stderr, as lines rlxrun reads back:
 *   rlxcoll[R] flight-recorder<TAB>reason<TAB>kept<TAB>calls
 *   rlxcoll[R] flight<TAB>comm<TAB>seq<TAB>state<TAB>start_s<TAB>dur_s<TAB>call<TAB>algo<TAB>waiting
 *   rlxcoll[R] flight-end
 * waiting_for (may be NULL) fills in whom an unfinished call waits on; the
 * caller holds whatever lock that needs. */
void rlx__flight_dump(const char *reason,
                      void (*waiting_for)(uint32_t comm, uint64_t seq, char *buf, size_t len));
/* A call failed: dump if RLX_FLIGHT_DUMP=error asked for it. */
int rlx__flight_dump_on_error(void);

/* ---- statistics (stats.c) ------------------------------------------------------- */

extern atomic_int rlx__stats_on;
#define RLX__STATS_ON() atomic_load_explicit(&rlx__stats_on, memory_order_relaxed)
/* A call of kind (a small index that orders the table, below
 * RLX__STATS_KINDS), named name (a static string), is over. */
#define RLX__STATS_KINDS 32
void rlx__stats_call(int kind, const char *name, size_t bytes, const char *algo, uint64_t ns,
                     int status);
/* Write the statistics to stderr as lines rlxrun reads back:
 *   rlxcoll[R] stats<TAB>call<TAB>calls<TAB>bytes<TAB>time_s<TAB>errors<TAB>bands
 *   rlxcoll[R] stats-conn<TAB>conns...<TAB>retransmits<TAB>strangers<TAB>corrupt
 * (bands: "<=1KiB:rd*12,ring*1;<=64KiB:..."); conns: connections opened
 * per transport, nconns of them in the transport table's order (shm, unix,
 * tcp today: the columns rlxrun --stats reads). */
void rlx__stats_print(int rank, const int *conns, int nconns, unsigned long retrans,
                      unsigned long strangers, unsigned long corrupt);
void rlx__stats_reset(void);

#endif
