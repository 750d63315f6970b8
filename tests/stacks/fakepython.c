/*
 * @brief libpython-gmt-fake.so: a stand-in for the interpreter in the offline splice test, with
 * an eval function of CPython's name, so make_trace.py can take real return addresses inside it
 * and inside the glue that calls it (the analyzer hides interpreter glue between Python frames).
 * Never run: only its code addresses and symbols are used.
 */
#include <stddef.h>

typedef void *(*gmt_fake_callback)(void *arg);

void *_PyEval_EvalFrameDefault(void *tstate, void *frame, int exc);
void *PyObject_Call(void *callable, void *args, void *kwargs);

/* The interpreter's eval loop: here it runs a C callback, as CPython runs a frame. */
__attribute__((noinline)) void *
_PyEval_EvalFrameDefault(void *tstate, void *frame, int exc)
{
	gmt_fake_callback cb = (gmt_fake_callback)frame;

	return cb(tstate) == NULL && exc ? NULL : tstate; /* SITE:eval-call */
}

/* C calling back into Python: a second entry into the eval function. */
__attribute__((noinline)) void *
PyObject_Call(void *callable, void *args, void *kwargs)
{
	return _PyEval_EvalFrameDefault(args, callable, kwargs != NULL); /* SITE:glue-call */
}
