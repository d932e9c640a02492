/* rlxrun --trace: join the ranks' timelines. Each rank's file holds one
 * event per line (lib/trace.c), already on the rendezvous host's clock and
 * with the rank as its pid, so merging is copying the event lines into one
 * array: one track group per rank in Perfetto. A part cut short (a rank
 * killed) still gives the events it wrote. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "report.h"

int trace_merge(const char *prefix, int nranks) {
  char part[4096], tmp[4096], *line = NULL;
  size_t cap = 0;
  unsigned long events = 0;
  int missing = 0, first = 1;
  snprintf(tmp, sizeof(tmp), "%s.merging", prefix);
  FILE *out = fopen(tmp, "w");
  if (out == NULL) {
    fprintf(stderr, "rlxrun: --trace: cannot write %s: %s\n", tmp, strerror(errno));
    return -1;
  }
  fputs("{\"traceEvents\":[\n", out);
  for (int r = 0; r < nranks; r++) {
    snprintf(part, sizeof(part), "%s.%d", prefix, r);
    FILE *in = fopen(part, "r");
    if (in == NULL) {
      missing++;
      continue;
    }
    ssize_t n;
    while ((n = getline(&line, &cap, in)) > 0) {
      if (strncmp(line, "{\"ph\":", 6) != 0)
        continue; /* the array's opening and closing lines */
      while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == ','))
        line[--n] = '\0';
      if (n == 0 || line[n - 1] != '}')
        continue; /* cut in the middle of a line */
      fprintf(out, "%s%s", first ? "" : ",\n", line);
      first = 0;
      events++;
    }
    fclose(in);
    unlink(part);
  }
  free(line);
  fputs("\n],\"displayTimeUnit\":\"ms\"}\n", out);
  if (fclose(out) != 0 || rename(tmp, prefix) != 0) {
    fprintf(stderr, "rlxrun: --trace: cannot write %s: %s\n", prefix, strerror(errno));
    unlink(tmp);
    return -1;
  }
  if (missing)
    fprintf(stderr, "rlxrun: trace: %d rank(s) left no timeline (%s.RANK missing)\n", missing,
            prefix);
  fprintf(stderr, "rlxrun: trace: %lu events of %d rank(s) in %s (open in ui.perfetto.dev or "
                  "chrome://tracing, or draw it with rlx-plot timeline)\n",
          events, nranks - missing, prefix);
  return 0;
}
