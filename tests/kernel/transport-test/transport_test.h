/* SPDX-License-Identifier: GPL-2.0-only */
/* The transport test module's parts (transport_test_main.c, fault_test.c). */
#ifndef TRANSPORT_TEST_H
#define TRANSPORT_TEST_H

#include <linux/completion.h>

/*
 * Waits for a thread of the test to finish, a second at a time: on a
 * debug kernel under TCG the concurrent readers take longer than
 * hung_task_timeout_secs, which is no hang of the module's init, while a
 * test thread that does hang in D state is still reported, by its own
 * name.
 */
static inline void wait_for_test_thread(struct completion *done)
{
	while (!wait_for_completion_timeout(done, HZ))
		;
}

/*
 * Against a fake server on the guest's loopback; 0 when every case went
 * as it must, and then the "hang" parameter is ready until ..._end.
 */
int transport_fault_test(void);
void transport_fault_test_end(void);

#endif /* TRANSPORT_TEST_H */
