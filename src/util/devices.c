/*
 * @brief Device bus ids published for the writer (see devices.h).
 */
#include "util/devices.h"

#include <stdatomic.h>
#include <string.h>

enum { SLOT_EMPTY, SLOT_WRITING, SLOT_READY };

static struct {
	_Atomic int state;
	char busid[GMT_BUSID_MAX];
} devices[GMT_DEVICES_MAX];

static bool
valid(int device)
{
	return device >= 0 && device < GMT_DEVICES_MAX;
}

bool
gmt_device_known(int device)
{
	return !valid(device) ||
	       atomic_load_explicit(&devices[device].state, memory_order_relaxed) != SLOT_EMPTY;
}

void
gmt_device_note(int device, const char *busid)
{
	int expected = SLOT_EMPTY;

	if (!valid(device) || !busid || !busid[0])
		return;
	if (!atomic_compare_exchange_strong(&devices[device].state, &expected, SLOT_WRITING))
		return;
	size_t n = strnlen(busid, GMT_BUSID_MAX - 1);
	memcpy(devices[device].busid, busid, n);
	devices[device].busid[n] = '\0';
	atomic_store_explicit(&devices[device].state, SLOT_READY, memory_order_release);
}

bool
gmt_device_busid(int device, char *buf, size_t n)
{
	if (!valid(device) || n == 0 ||
	    atomic_load_explicit(&devices[device].state, memory_order_acquire) != SLOT_READY)
		return false;
	strncpy(buf, devices[device].busid, n - 1);
	buf[n - 1] = '\0';
	return true;
}
