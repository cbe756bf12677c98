/* bench/c_clock.c: figure 000's async timing-only schedule in C, a measured answer to "what
 * would a compiled event loop give". Not part of pslab: bench/c_clock.py compiles it
 * when a C compiler is there and checks that it gives pslab's makespan and span count bit for
 * bit before timing it. Same algorithm as pslab.simulation: a heap of (time, sequence) events,
 * Lindley's recursion per shard, holes before a queued transfer become idle spans, each span
 * three doubles (code, start, end) as in pslab.columns. */
#include <stdlib.h>

typedef struct { double t; long seq; int rank, step, computed; } Event;

typedef struct {
    Event *heap; long n, seq;
    double *rows; long spans;
    double *free_at;
    int shards;
} Clock;

static int before(const Event *a, const Event *b) {
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void push_event(Clock *c, double t, int rank, int step, int computed) {
    long i = c->n++;
    Event e = {t, c->seq++, rank, step, computed};
    while (i > 0) {
        long parent = (i - 1) / 2;
        if (!before(&e, &c->heap[parent])) break;
        c->heap[i] = c->heap[parent];
        i = parent;
    }
    c->heap[i] = e;
}

static Event pop_event(Clock *c) {
    Event top = c->heap[0], last = c->heap[--c->n];
    long i = 0;
    for (;;) {
        long child = 2 * i + 1;
        if (child >= c->n) break;
        if (child + 1 < c->n && before(&c->heap[child + 1], &c->heap[child])) child++;
        if (!before(&c->heap[child], &last)) break;
        c->heap[i] = c->heap[child];
        i = child;
    }
    c->heap[i] = last;
    return top;
}

static void span(Clock *c, double code, double a, double b) {
    double *r = c->rows + 3 * c->spans++;
    r[0] = code; r[1] = a; r[2] = b;
}

/* book one transfer per shard at `now`; idle spans for the holes; returns the last end */
static double transfer(Clock *c, double now, const double *cost, double code) {
    double end = now, last = now, starts[64], ends[64];
    int ordered = 1, s;
    long first = c->spans;
    for (s = 0; s < c->shards; s++) {
        double a = c->free_at[s] > now ? c->free_at[s] : now;
        double b = c->free_at[s] = a + cost[s];
        span(c, code + s, a, b);
        starts[s] = a; ends[s] = b;
        if (a < last) ordered = 0;
        last = a;
    }
    if (ordered) {
        for (s = 0; s < c->shards; s++) {
            if (starts[s] > end) span(c, code - 1, end, starts[s]);
            if (ends[s] > end) end = ends[s];
        }
    } else {  /* sort the few intervals by start (insertion sort), then find the holes */
        int i, j;
        for (i = 1; i < c->shards; i++)
            for (j = i; j > 0 && starts[j] < starts[j - 1]; j--) {
                double x = starts[j]; starts[j] = starts[j - 1]; starts[j - 1] = x;
                x = ends[j]; ends[j] = ends[j - 1]; ends[j - 1] = x;
            }
        for (s = 0; s < c->shards; s++) {
            if (starts[s] > end) span(c, code - 1, end, starts[s]);
            if (ends[s] > end) end = ends[s];
        }
    }
    (void)first;
    return end;
}

/* dur: workers x steps compute seconds; tr, up: per shard transfer and update seconds.
 * rows: room for the spans (3 doubles each). Returns the makespan; *spans gets the count. */
double run_async(int workers, int shards, int steps, const double *dur, const double *tr,
                 const double *up, double *rows, long *spans) {
    Clock c = {malloc(sizeof(Event) * (workers + 1)), 0, 0, rows, 0,
               calloc(shards, sizeof(double)), shards};
    double now = 0.0, last_update = 0.0;
    int r;
    for (r = 0; r < workers; r++) push_event(&c, 0.0, r, 0, 0);
    while (c.n) {
        Event e = pop_event(&c);
        now = e.t;
        if (!e.computed) {  /* fetch, then compute */
            double t;
            if (e.step == steps) continue;
            t = transfer(&c, now, tr, 1000.0 * (e.rank + 1) + 10.0 * e.step);
            span(&c, 2.0, t, t + dur[(long)e.rank * steps + e.step]);
            push_event(&c, t + dur[(long)e.rank * steps + e.step], e.rank, e.step, 1);
        } else {  /* push, the shards' updates right behind, then the next step */
            double done = transfer(&c, now, tr, 1000.0 * (e.rank + 1) + 10.0 * e.step + 5.0);
            double applied = 0.0;
            int s;
            for (s = 0; s < shards; s++) {
                double u0 = c.free_at[s] > now ? c.free_at[s] : now;
                double u1 = c.free_at[s] = u0 + up[s];
                span(&c, 3.0, u0, u1);
                if (u1 > applied) applied = u1;
            }
            last_update = applied;
            push_event(&c, done, e.rank, e.step + 1, 0);
        }
    }
    free(c.heap); free(c.free_at);
    *spans = c.spans;
    return now > last_update ? now : last_update;
}
