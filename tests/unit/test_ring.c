/*
 * Ring buffer: FIFO order, full-ring behaviour, events written in place (claim, commit), and a
 * multi-producer stress in which every pushed event arrives exactly once and in per-producer
 * order, while drops are counted exactly (half the producers write in place, the others push
 * copies, whole or their core alone).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "ring/ring.h"

#define PRODUCERS 8
#define PER_PRODUCER_DEFAULT 200000

static uint64_t per_producer = PER_PRODUCER_DEFAULT; /* GMT_TEST_QUICK=1 (valgrind): 1/20 */

static struct gmt_ring ring;
static _Atomic uint64_t pushed_ok, dropped;
static _Atomic int go;

static void *
alloc_slots(size_t n)
{
	void *m = mmap(NULL, gmt_ring_bytes(n), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	CHECK(m != MAP_FAILED);
	return m;
}

static void
test_fifo_and_full(void)
{
	struct gmt_ring r;
	struct gmt_event ev = {0}, out;
	size_t n = 8;

	gmt_ring_init(&r, alloc_slots(n), n);
	CHECK(!gmt_ring_pop(&r, &out)); /* empty */
	for (uint64_t i = 1; i <= n; i++) {
		ev.seq = i;
		CHECK(gmt_ring_push(&r, &ev));
	}
	ev.seq = 99;
	CHECK(!gmt_ring_push(&r, &ev)); /* full: fails at once, nothing overwritten */
	CHECK_EQ_U64(gmt_ring_pending(&r), n);
	for (uint64_t i = 1; i <= n; i++) {
		CHECK(gmt_ring_pop(&r, &out));
		CHECK_EQ_U64(out.seq, i);
	}
	CHECK(!gmt_ring_pop(&r, &out));
	/* producers see room the consumer made since their last look at its tail, and no more:
	 * fill, take 3 out, 3 go in, the 4th is refused; then the order is still FIFO */
	for (uint64_t i = 1; i <= n; i++) {
		ev.seq = 100 + i;
		CHECK(gmt_ring_push(&r, &ev));
	}
	for (uint64_t i = 1; i <= 3; i++) {
		CHECK(gmt_ring_pop(&r, &out));
		CHECK_EQ_U64(out.seq, 100 + i);
	}
	for (uint64_t i = n + 1; i <= n + 3; i++) {
		ev.seq = 100 + i;
		CHECK(gmt_ring_push(&r, &ev));
	}
	CHECK(!gmt_ring_push(&r, &ev));
	for (uint64_t i = 4; i <= n + 3; i++) {
		CHECK(gmt_ring_pop(&r, &out));
		CHECK_EQ_U64(out.seq, 100 + i);
	}
	CHECK(!gmt_ring_pop(&r, &out));
	/* wrap around many times */
	for (uint64_t i = 0; i < 1000; i++) {
		ev.seq = i;
		CHECK(gmt_ring_push(&r, &ev));
		CHECK(gmt_ring_pop(&r, &out));
		CHECK_EQ_U64(out.seq, i);
	}
}

/* In place: the consumer sees nothing of a claimed slot until its commit; a full ring refuses a
 * claim as it refuses a push. */
static void
test_claim_commit(void)
{
	struct gmt_ring r;
	struct gmt_event *slot, out, ev = {0};
	uint64_t pos[4];
	size_t n = 4;

	gmt_ring_init(&r, alloc_slots(n), n);
	for (uint64_t i = 0; i < n; i++) {
		slot = gmt_ring_claim(&r, &pos[i]);
		CHECK(slot != NULL);
		CHECK_EQ_U64(pos[i], i);
		memset(slot, 0xa5, sizeof(*slot)); /* an old event's bytes */
		gmt_event_clear(slot);
		slot->seq = 10 + i;
	}
	CHECK(gmt_ring_claim(&r, &pos[0]) == NULL); /* full */
	CHECK(!gmt_ring_push(&r, &ev));
	CHECK(!gmt_ring_pop(&r, &out)); /* claimed, not committed */
	gmt_ring_commit(&r, 1);
	CHECK(!gmt_ring_pop(&r, &out)); /* position 0 first */
	gmt_ring_commit(&r, 0);
	CHECK(gmt_ring_pop(&r, &out));
	CHECK_EQ_U64(out.seq, 10);
	CHECK(gmt_ring_pop(&r, &out));
	CHECK_EQ_U64(out.seq, 11);
	CHECK_EQ_U64(out.ptr, 0); /* cleared: nothing left of the old bytes */
	CHECK_EQ_U64(out.label[GMT_LABEL_MAX - 1], 0);
	CHECK_EQ_U64(out.layer == NULL, 1);
	CHECK(!gmt_ring_pop(&r, &out));
	gmt_ring_commit(&r, 2);
	gmt_ring_commit(&r, 3);
	CHECK(gmt_ring_claim(&r, &pos[0]) != NULL); /* room again: position 4 */
	CHECK_EQ_U64(pos[0], 4);
}

/* Events of the CUDA level go in as their core alone (gmt_ring_push_core()): the consumer's copy
 * has zeros past the core whatever the slot held a lap before, and the source's bytes past the
 * core are never read; the ring-only flag does not come out. */
static void
test_core_only(void)
{
	struct gmt_ring r;
	struct gmt_event ev, out;

	gmt_ring_init(&r, alloc_slots(2), 2);
	memset(&ev, 0, sizeof(ev));
	for (int i = 0; i < 2; i++) { /* a lap of full events with every field past the core set */
		ev.seq = (uint64_t)i + 1;
		strcpy(ev.label, "an old marker");
		ev.range_depth = 3;
		ev.range = GMT_RANGE_PUSH;
		ev.torch_action = 5;
		ev.pool2 = 77;
		ev.layer = (const struct gmt_torch_layer *)(uintptr_t)0x1000;
		CHECK(gmt_ring_push(&r, &ev));
		CHECK(gmt_ring_pop(&r, &out));
		CHECK_EQ_U64(out.pool2, 77);
	}
	for (int i = 0; i < 3; i++) {
		memset(&ev, 0xa5, sizeof(ev)); /* the tail: bytes the core push must not copy */
		gmt_event_clear_core(&ev);
		ev.seq = 10 + (uint64_t)i;
		ev.ptr = 0x7f0000 + (uint64_t)i;
		ev.size = 4096;
		ev.device = 1;
		ev.op = GMT_OP_ALLOC;
		ev.flags = GMT_EV_PTSZ;
		CHECK(gmt_ring_push_core(&r, &ev));
		CHECK(gmt_ring_pop(&r, &out));
		CHECK_EQ_U64(out.seq, 10 + (uint64_t)i);
		CHECK_EQ_U64(out.ptr, 0x7f0000 + (uint64_t)i);
		CHECK_EQ_U64(out.size, 4096);
		CHECK(out.device == 1 && out.op == GMT_OP_ALLOC);
		CHECK_EQ_U64(out.flags, GMT_EV_PTSZ); /* GMT_EV_CORE_ONLY stays in the ring */
		CHECK(out.label[0] == 0 && out.range_depth == 0 && out.range == GMT_RANGE_NONE);
		CHECK(out.torch_action == 0 && out.pool2 == 0 && out.layer == NULL);
	}
	/* a full event after core ones: its own bytes, all of them */
	memset(&ev, 0, sizeof(ev));
	strcpy(ev.label, "a marker");
	ev.pool2 = 5;
	CHECK(gmt_ring_push(&r, &ev));
	CHECK(gmt_ring_pop(&r, &out));
	CHECK(strcmp(out.label, "a marker") == 0 && out.pool2 == 5 && out.flags == 0);
	CHECK(!gmt_ring_pop(&r, &out));
}

static void *
producer(void *arg)
{
	uint32_t id = (uint32_t)(uintptr_t)arg;
	struct gmt_event ev = {0};

	if (id % 4 == 2) /* core pushes: a tail that must not come through */
		memset(ev.label, 'x', sizeof(ev.label) - 1);

	while (!atomic_load(&go))
		;
	for (uint64_t i = 0; i < per_producer; i++) {
		ev.tid = (int32_t)id;
		ev.seq = i;
		ev.ptr = ((uint64_t)id << 32) | i; /* payload checked by the consumer */
		ev.size = ~ev.ptr;
		bool ok;
		if (id & 1) { /* in place */
			uint64_t pos;
			struct gmt_event *slot = gmt_ring_claim(&ring, &pos);
			ok = slot != NULL;
			if (ok) {
				gmt_event_clear(slot);
				slot->tid = ev.tid;
				slot->seq = ev.seq;
				slot->ptr = ev.ptr;
				slot->size = ev.size;
				gmt_ring_commit(&ring, pos);
			}
		} else if (id % 4 == 2) {
			ok = gmt_ring_push_core(&ring, &ev);
		} else {
			ok = gmt_ring_push(&ring, &ev);
		}
		if (ok)
			atomic_fetch_add(&pushed_ok, 1);
		else
			atomic_fetch_add(&dropped, 1);
	}
	return NULL;
}

static void
test_stress(size_t nslots)
{
	pthread_t th[PRODUCERS];
	int64_t last[PRODUCERS];
	uint64_t received = 0;
	struct gmt_event out;

	gmt_ring_init(&ring, alloc_slots(nslots), nslots);
	atomic_store(&pushed_ok, 0);
	atomic_store(&dropped, 0);
	atomic_store(&go, 0);
	for (int i = 0; i < PRODUCERS; i++) {
		last[i] = -1;
		CHECK(pthread_create(&th[i], NULL, producer, (void *)(uintptr_t)i) == 0);
	}
	atomic_store(&go, 1);

	int finished = 0;
	for (;;) {
		if (gmt_ring_pop(&ring, &out)) {
			CHECK(out.tid >= 0 && out.tid < PRODUCERS);
			/* each producer's events arrive in order, each once (no duplicates, no
			 * reordering) */
			CHECK((int64_t)out.seq > last[out.tid]);
			last[out.tid] = (int64_t)out.seq;
			CHECK_EQ_U64(out.ptr, ((uint64_t)out.tid << 32) | out.seq);
			CHECK_EQ_U64(out.size, ~out.ptr); /* the payload was not torn */
			CHECK(out.label[0] == 0 && out.flags == 0);
			received++;
			continue;
		}
		if (finished)
			break;
		if (atomic_load(&pushed_ok) + atomic_load(&dropped) ==
		    (uint64_t)PRODUCERS * per_producer) {
			for (int i = 0; i < PRODUCERS; i++)
				pthread_join(th[i], NULL);
			finished = 1; /* one more pass drains what is left */
		}
	}
	CHECK_EQ_U64(received, atomic_load(&pushed_ok));
	CHECK_EQ_U64(received + atomic_load(&dropped), (uint64_t)PRODUCERS * per_producer);
	printf("ring %zu slots: %llu received, %llu dropped\n", nslots,
	       (unsigned long long)received, (unsigned long long)atomic_load(&dropped));
}

int
main(void)
{
	if (getenv("GMT_TEST_QUICK"))
		per_producer /= 20;
	test_fifo_and_full();
	test_claim_commit();
	test_core_only();
	test_stress(1 << 16); /* roomy: few or no drops */
	test_stress(64);      /* tiny: many drops, all counted */
	printf("ring: ok\n");
	return 0;
}
