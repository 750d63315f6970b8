/*
 * @brief The reader's items into a model, on the reader's thread or on one of their own
 * (feed.h).
 *
 * Threaded, the items go in batches of BATCH through a ring of NBATCH: the reader fills the
 * batch after those handed over, the replay thread takes the oldest; a full ring makes the
 * reader wait, an empty one the replay. The reader's sync hands over the batch it was filling
 * and waits for an empty ring. The thread starts with the first full batch: a trace of fewer
 * items is replayed on the reader's thread as they come at each sync, as is every item when the
 * thread cannot be had.
 */
#define _GNU_SOURCE
#include "analysis/session/feed.h"
#include "util/cputime.h"

#include <pthread.h>
#include <stdlib.h>

#define BATCH 1024
#define NBATCH 4

struct item {
	bool marker;
	union {
		struct gmt_trace_event ev;
		struct gmt_trace_marker mk; /* a copy: the reader's array moves as it grows (its
					       label stays where it is) */
	};
};

struct gmt_feed {
	struct gmt_model *m;
	struct gmt_range_opt range;
	bool oom;
	bool threaded; /* wanted */
	/* the ring, once an item came */
	struct item *ring[NBATCH];
	size_t len[NBATCH];
	size_t slot, n; /* the reader's: the batch it fills, its items */
	/* the thread, once a batch was full */
	bool running;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t more, done;
	size_t head, count; /* under mu: the batches handed over, ring[head] the oldest */
	bool quit;
};

static void
replay(struct gmt_model *m, const struct item *it, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (it[i].marker)
			gmt_model_marker(m, &it[i].mk);
		else
			gmt_model_event(m, &it[i].ev);
	}
}

static void *
replay_main(void *arg)
{
	struct gmt_feed *f = arg;

	pthread_mutex_lock(&f->mu);
	for (;;) {
		while (!f->count && !f->quit)
			pthread_cond_wait(&f->more, &f->mu);
		if (!f->count)
			break;
		size_t i = f->head;
		pthread_mutex_unlock(&f->mu);
		replay(f->m, f->ring[i], f->len[i]);
		pthread_mutex_lock(&f->mu);
		f->head = (f->head + 1) % NBATCH;
		f->count--;
		pthread_cond_broadcast(&f->done);
	}
	pthread_mutex_unlock(&f->mu);
	gmt_cputime_note("gmt-replay");
	return NULL;
}

static bool
start(struct gmt_feed *f)
{
	pthread_attr_t attr;
	bool ok = false;

	if (pthread_mutex_init(&f->mu, NULL) != 0)
		return false;
	if (pthread_cond_init(&f->more, NULL) != 0)
		goto err_mu;
	if (pthread_cond_init(&f->done, NULL) != 0)
		goto err_more;
	if (pthread_attr_init(&attr) == 0) {
		pthread_attr_setstacksize(&attr, 1u << 20); /* the model's sorts and tables */
		ok = pthread_create(&f->th, &attr, replay_main, f) == 0;
		if (ok)
			pthread_setname_np(f->th, "gmt-replay");
		pthread_attr_destroy(&attr);
	}
	if (ok)
		return true;
	pthread_cond_destroy(&f->done);
err_more:
	pthread_cond_destroy(&f->more);
err_mu:
	pthread_mutex_destroy(&f->mu);
	return false;
}

/* The batch being filled to the replay; @p full: it is full (the thread may start). */
static void
hand_over(struct gmt_feed *f, bool full)
{
	if (!f->n)
		return;
	if (!f->running && full && f->threaded) {
		f->running = start(f);
		f->threaded = f->running;
	}
	if (!f->running) {
		replay(f->m, f->ring[f->slot], f->n);
		f->n = 0;
		return;
	}
	pthread_mutex_lock(&f->mu);
	f->len[f->slot] = f->n;
	f->count++;
	pthread_cond_signal(&f->more);
	while (f->count == NBATCH)
		pthread_cond_wait(&f->done, &f->mu);
	f->slot = (f->head + f->count) % NBATCH; /* the ring's next free batch */
	pthread_mutex_unlock(&f->mu);
	f->n = 0;
}

static void
feed_sync(void *ctx)
{
	struct gmt_feed *f = ctx;

	hand_over(f, false);
	if (!f->running)
		return;
	pthread_mutex_lock(&f->mu);
	while (f->count)
		pthread_cond_wait(&f->done, &f->mu);
	pthread_mutex_unlock(&f->mu);
}

/* The model, made at the first item; NULL when it could not be had (oom). A full batch is handed
 * over first (the thread starts then; if it cannot, f->threaded is off from there on). */
static struct gmt_model *
model(struct gmt_feed *f, const struct gmt_trace *t)
{
	if (!f->m && !f->oom && !(f->m = gmt_model_new(t, &f->range)))
		f->oom = true;
	if (!f->oom && f->n == BATCH)
		hand_over(f, true);
	return f->oom ? NULL : f->m;
}

/* Room for one more item, threaded (f->n < BATCH); NULL out of memory (oom). */
static struct item *
next_item(struct gmt_feed *f)
{
	if (!f->ring[0]) {
		for (size_t i = 0; i < NBATCH; i++) {
			if (!(f->ring[i] = malloc(BATCH * sizeof(struct item)))) {
				f->oom = true;
				return NULL;
			}
		}
	}
	return &f->ring[f->slot][f->n++];
}

static void
feed_event(void *ctx, const struct gmt_trace *t, const struct gmt_trace_event *ev)
{
	struct gmt_feed *f = ctx;
	struct gmt_model *m = model(f, t);
	struct item *it;

	if (m && !f->threaded)
		gmt_model_event(m, ev); /* (after any batch left by a thread that did not start) */
	else if (m && (it = next_item(f))) {
		it->marker = false;
		it->ev = *ev;
	}
}

static void
feed_marker(void *ctx, const struct gmt_trace *t, const struct gmt_trace_marker *mk)
{
	struct gmt_feed *f = ctx;
	struct gmt_model *m = model(f, t);
	struct item *it;

	if (m && !f->threaded)
		gmt_model_marker(m, mk);
	else if (m && (it = next_item(f))) {
		it->marker = true;
		it->mk = *mk;
	}
}

struct gmt_feed *
gmt_feed_new(const struct gmt_range_opt *range, bool threaded)
{
	struct gmt_feed *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	if (range)
		f->range = *range;
	f->threaded = threaded;
	return f;
}

struct gmt_trace_sink
gmt_feed_sink(struct gmt_feed *f)
{
	return (struct gmt_trace_sink){
	    .event = feed_event, .marker = feed_marker, .ctx = f, .sync = feed_sync};
}

struct gmt_model *
gmt_feed_end(struct gmt_feed *f, bool *oom)
{
	struct gmt_model *m;

	if (!f->oom)
		feed_sync(f);
	if (f->running) {
		pthread_mutex_lock(&f->mu);
		f->quit = true;
		pthread_cond_signal(&f->more);
		pthread_mutex_unlock(&f->mu);
		pthread_join(f->th, NULL);
		pthread_cond_destroy(&f->done);
		pthread_cond_destroy(&f->more);
		pthread_mutex_destroy(&f->mu);
	}
	for (size_t i = 0; i < NBATCH; i++)
		free(f->ring[i]);
	m = f->m;
	*oom = f->oom;
	free(f);
	return m;
}
