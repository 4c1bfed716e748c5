/* SPDX-License-Identifier: GPL-2.0-only */
/* The transport test module's parts (transport_test_main.c, fault_test.c). */
#ifndef TRANSPORT_TEST_H
#define TRANSPORT_TEST_H

/*
 * Against a fake server on the guest's loopback; 0 when every case went
 * as it must, and then the "hang" parameter is ready until ..._end.
 */
int transport_fault_test(void);
void transport_fault_test_end(void);

#endif /* TRANSPORT_TEST_H */
