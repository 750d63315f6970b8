/*
 * @brief The registry's fork path without an interpreter: pystack.c is included so the test can
 * stage what a fork() in the middle of another thread's registration leaves behind (a claimed
 * slot without an id, an id without a record) and run the child handler on it.
 */
#include "../../src/capture/pystack.c"

#include "check.h"

/* A published record for @p id, as register_code() leaves it. */
static void
publish(uint32_t id, const char *file)
{
	struct pytext t = {.file_len = strlen(file), .name_len = 1, .qual_len = 1};
	size_t off = arena_reserve(sizeof(struct pyrec) + t.file_len + 5);

	memcpy(t.file, file, t.file_len + 1);
	memcpy(t.name, "f", 2);
	memcpy(t.qual, "f", 2);
	fill_record((struct pyrec *)(arena + off), id, 7, &t);
	atomic_store(&by_id[id], (uint32_t)off + 1);
}

int
main(void)
{
	struct gmt_pycode_view c;

	L = layout_312;
	CHECK(map_registry());
	atomic_store(&py_state, PY_READY);

	/* ids 1 and 3 published, 2 taken by a thread that vanished in the fork; its slot too */
	publish(1, "a.py");
	publish(3, "c.py");
	atomic_store(&next_id, 4);
	atomic_store(&table[5].tag, 0x1234);
	atomic_store(&table[9].tag, 0x5678);
	atomic_store(&table[9].id, 3);
	atomic_store(&in_flight, 1);

	CHECK(gmt_py_next_code(&c) && c.id == 1 && strcmp(c.file, "a.py") == 0);
	CHECK(!gmt_py_next_code(&c)); /* 2 is not published yet: keep the order, wait */

	atfork_child();
	CHECK(atomic_load(&table[5].id) == DEAD && atomic_load(&table[9].id) == 3);
	CHECK(atomic_load(&by_id[2]) == DEAD && atomic_load(&in_flight) == 0);
	/* the child's writer starts over, and passes over the retired id */
	CHECK(gmt_py_next_code(&c) && c.id == 1);
	CHECK(gmt_py_next_code(&c) && c.id == 3 && strcmp(c.file, "c.py") == 0 &&
	      c.firstlineno == 7 && strcmp(c.version, "3.12") == 0);
	CHECK(!gmt_py_next_code(&c));
	CHECK(gmt_py_code(3, &c) && !gmt_py_code(2, &c) && !gmt_py_code(4, &c));
	gmt_py_rewind();
	CHECK(gmt_py_next_code(&c) && c.id == 1);
	return 0;
}
