// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * table.c - the number tables poll_cq looks objects up in (softhca.h
 * struct softhca_num_table): a context's QPs by QPN and its XRC SRQs by
 * SRQ number. Writers hold the context's qp_table_mutex; readers take no
 * lock, so an entry is published and cleared with release stores, and a
 * second level, once published, stays until the context goes.
 */
#include <stdlib.h>

#include "softhca.h"

int softhca_table_insert(struct softhca_num_table *tbl, uint32_t n, void *obj)
{
	uint32_t top = (n & SOFTHCA_24BIT_MASK) >> SOFTHCA_QP_TABLE_SHIFT;
	void **t = tbl->l1[top];

	if (!t) {
		t = calloc(SOFTHCA_QP_TABLE_SIZE, sizeof(*t));
		if (!t)
			return ENOMEM;
		__atomic_store_n(&tbl->l1[top], t, __ATOMIC_RELEASE);
	}
	if (t[n & SOFTHCA_QP_TABLE_MASK])
		return EEXIST;
	__atomic_store_n(&t[n & SOFTHCA_QP_TABLE_MASK], obj, __ATOMIC_RELEASE);
	return 0;
}

void softhca_table_remove(struct softhca_num_table *tbl, uint32_t n,
			  void *obj)
{
	void **t = tbl->l1[(n & SOFTHCA_24BIT_MASK) >> SOFTHCA_QP_TABLE_SHIFT];

	if (t && t[n & SOFTHCA_QP_TABLE_MASK] == obj)
		__atomic_store_n(&t[n & SOFTHCA_QP_TABLE_MASK], NULL,
				 __ATOMIC_RELEASE);
}

void softhca_table_free(struct softhca_num_table *tbl)
{
	for (uint32_t i = 0; i < SOFTHCA_QP_TABLE_SIZE; i++)
		free(tbl->l1[i]);
}
