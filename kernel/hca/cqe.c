// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: the one CQE writer, and the builders of the CQEs the
 * engine writes. Layout and owner-bit rules: Documentation/queue-formats.md.
 *
 * Every CQE goes through hca_cqe_write(): under the CQ's producer lock it
 * checks for overrun against the consumer index the provider left in the
 * CQ doorbell record (a hint: it is only compared, never used to address
 * memory), writes the 63 bytes before op_own, issues a write barrier and
 * stores op_own last with the owner bit of the producer's lap. An error
 * CQE is counted by its syndrome when it is built (hca_cqe_init_err()).
 */
#include <linux/hrtimer.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <rdma/softhca-cqe.h>

#include "engine.h"

/*
 * Per syndrome: the vendor syndrome (ibv_wc.vendor_err) reported with it,
 * modelled on the values ConnectX adapters report for the same errors
 * (nothing should depend on them beyond "non-zero on error"), and the Q
 * counter of its error completions. A syndrome not listed has neither.
 */
#define HCA_SYNDROME(synd, vendor, cnt) \
	[SOFTHCA_CQE_SYNDROME_##synd] = { vendor, HCA_QCNT_CQE_##cnt }

static const struct {
	u8 vendor_err;
	u8 counter;			/* enum hca_q_counter */
} hca_syndromes[] = {
	HCA_SYNDROME(LOCAL_LENGTH_ERR,		0x69, LOC_LEN_ERR),
	HCA_SYNDROME(LOCAL_QP_OP_ERR,		0x68, LOC_QP_OP_ERR),
	HCA_SYNDROME(LOCAL_PROT_ERR,		0x56, LOC_PROT_ERR),
	HCA_SYNDROME(WR_FLUSH_ERR,		0xf9, WR_FLUSH_ERR),
	HCA_SYNDROME(REMOTE_INVAL_REQ_ERR,	0x8a, REM_INV_REQ_ERR),
	HCA_SYNDROME(REMOTE_ACCESS_ERR,		0x88, REM_ACCESS_ERR),
	HCA_SYNDROME(REMOTE_OP_ERR,		0x89, REM_OP_ERR),
	HCA_SYNDROME(TRANSPORT_RETRY_EXC_ERR,	0x81, RETRY_EXC_ERR),
	HCA_SYNDROME(RNR_RETRY_EXC_ERR,		0x82, RNR_RETRY_EXC_ERR),
};

/*
 * A successful requester CQE for @wqe of @qp. The immediate of SEND_IMM and
 * RDMA_WRITE_IMM is echoed, so the provider can report it with
 * IBV_WC_WITH_IMM as it does for the receiver.
 */
void hca_cqe_init_req(struct softhca_cqe *cqe, struct hca_qp *qp,
		       const struct hca_wqe *wqe, u32 byte_cnt)
{
	memset(cqe, 0, sizeof(*cqe));
	if (wqe->op->flags & SOFTHCA_OPF_IMM)
		cqe->imm_inval_pkey = wqe->imm;
	cqe->byte_cnt = cpu_to_be32(byte_cnt);
	cqe->sop_drop_qpn = cpu_to_be32((u32)wqe->opcode <<
					SOFTHCA_CQE_WQE_OPCODE_SHIFT |
					(qp->qpn & SOFTHCA_24BIT_MASK));
	cqe->wqe_counter = cpu_to_be16(wqe->idx);
	cqe->op_own = SOFTHCA_CQE_REQ << SOFTHCA_CQE_OPCODE_SHIFT;
}

/*
 * An error CQE: @cqe_opcode is SOFTHCA_CQE_REQ_ERR (send queue) or
 * SOFTHCA_CQE_RESP_ERR (receive queue); @wqe_counter the index of the WQE
 * it completes. It is counted by its syndrome in @cnt, the counters of the
 * side of the QP that generates it (a CQE an overrun loses included).
 */
void hca_cqe_init_err(struct softhca_cqe *cqe, u64 *cnt, u8 cqe_opcode,
		       u32 qpn, u8 wqe_opcode, u16 wqe_counter, u8 syndrome)
{
	u8 vendor_err = 0;

	if (syndrome < ARRAY_SIZE(hca_syndromes) &&
	    hca_syndromes[syndrome].vendor_err) {
		vendor_err = hca_syndromes[syndrome].vendor_err;
		hca_count(cnt, hca_syndromes[syndrome].counter, 1);
	}
	memset(cqe, 0, sizeof(*cqe));
	cqe->syndrome = syndrome;
	cqe->vendor_err_synd = vendor_err;
	cqe->sop_drop_qpn = cpu_to_be32((u32)wqe_opcode <<
					SOFTHCA_CQE_WQE_OPCODE_SHIFT |
					(qpn & SOFTHCA_24BIT_MASK));
	cqe->wqe_counter = cpu_to_be16(wqe_counter);
	cqe->op_own = cqe_opcode << SOFTHCA_CQE_OPCODE_SHIFT;
}

/*
 * Moderation (MODIFY_CQ): is an event for @pending CQEs due? When only
 * the period can make it so, the timer is set to its end; the timer rings
 * the CQ's doorbell slot and the engine asks again (hca_cq_arm_poll()).
 * hrtimers never fire early, so that second look finds it due. Under
 * cq->lock.
 */
static bool hca_cq_mod_due(struct hca_cq *cq, u32 pending)
{
	u64 end;

	if (cq->mod_count && pending >= cq->mod_count)
		return true;
	if (!cq->mod_period)
		return false;
	end = cq->ev_first_ns + (u64)cq->mod_period * NSEC_PER_USEC;
	if (ktime_get_ns() >= end)
		return true;
	if (!cq->dying && !hrtimer_is_queued(&cq->mod_timer))
		hrtimer_start(&cq->mod_timer, ns_to_ktime(end),
			      HRTIMER_MODE_ABS_SOFT);
	return false;
}

/* Softirq: no cq->lock here (the engine holds it with softirqs on). */
enum hrtimer_restart hca_cq_mod_timer(struct hrtimer *t)
{
	struct hca_cq *cq = container_of(t, struct hca_cq, mod_timer);

	/* DESTROY_CQ cancels the timer before it frees the slot. */
	hca_area_doorbell(cq->db.area, cq->db.slot);
	return HRTIMER_NORESTART;
}

/*
 * Is the arm word @arm due now, given the CQEs written so far? Under
 * cq->lock. An arm covers the CQEs from its consumer index on that no
 * earlier event announced (those before ev_pi): it fires when one of them
 * exists (REQ_NOT) or one of them is solicited or an error (REQ_NOT_SOL),
 * once per arm_sn. So an arm that finds unconsumed CQEs nobody was told of
 * fires at once (no lost wake-up), while the usual "event, ack, re-arm,
 * then poll" loop gets no second event for the CQE that woke it.
 * The word is the provider's: any value is only compared, so garbage gives
 * at worst a spurious or a missing event for that CQ.
 */
static __always_inline bool hca_cq_arm_due(struct hca_cq *cq, u32 arm)
{
	u32 cmd = arm & SOFTHCA_CQ_DB_CMD_MASK;
	u8 sn = (arm >> SOFTHCA_CQ_DB_SN_SHIFT) & SOFTHCA_CQ_DB_SN_MASK;
	u32 ci = arm & SOFTHCA_CQ_DB_CI_MASK;
	u32 unconsumed, pending;

	if (cmd != SOFTHCA_CQ_DB_REQ_NOT && cmd != SOFTHCA_CQ_DB_REQ_NOT_SOL)
		return false;
	if (cq->fired && cq->fired_sn == sn)
		return false;
	unconsumed = (cq->pi - ci) & SOFTHCA_CQ_DB_CI_MASK;
	if (unconsumed > (1U << cq->log_size))
		return false;
	/* Of those, the ones written since the last event (full counters). */
	pending = min(unconsumed, cq->pi - cq->ev_pi);
	if (!pending)
		return false;
	/* The last solicited/error CQE is at sol_pi - 1: among them? */
	if (cmd == SOFTHCA_CQ_DB_REQ_NOT_SOL &&
	    !(cq->sol_seen &&
	      ((cq->pi - cq->sol_pi) & SOFTHCA_CQ_DB_CI_MASK) < pending))
		return false;
	if (unlikely(cq->mod_count | cq->mod_period) &&
	    !hca_cq_mod_due(cq, pending))
		return false;
	cq->fired = true;
	cq->fired_sn = sn;
	cq->ev_pi = cq->pi;
	return true;
}

/* Evaluate the arm word now in the record; under cq->lock. */
static bool hca_cq_arm_check(struct hca_cq *cq)
{
	__be32 arm = READ_ONCE(cq->dbr->arm);

	WRITE_ONCE(cq->arm_seen, arm);
	return hca_cq_arm_due(cq, be32_to_cpu(arm));
}

static void hca_cq_event(struct hca_cq *cq)
{
	/* A full EQ reports its overflow and keeps the event for later. */
	hca_eq_comp(cq->hca, cq->eqn, cq->cqn, &cq->ev_lost);
}

void hca_cq_resend_lost(struct hca *hca, u32 eqn)
{
	struct hca_cq *cq;
	unsigned long cqn;

	/* CQs are freed after a grace period (DESTROY_CQ: kfree_rcu). */
	rcu_read_lock();
	xa_for_each(&hca->cqs, cqn, cq) {
		if (cq->eqn != eqn || !READ_ONCE(cq->ev_lost) ||
		    !xchg(&cq->ev_lost, false))
			continue;
		/* Full again: set again, and resent after the next drain. */
		hca_eq_comp(hca, eqn, cq->cqn, &cq->ev_lost);
	}
	rcu_read_unlock();
}

void hca_cq_arm_poll(struct hca_cq *cq)
{
	bool due;

	spin_lock(&cq->lock);
	/* Always looked at, so the word is not seen as new again. */
	due = hca_cq_arm_check(cq) && !cq->overrun;
	spin_unlock(&cq->lock);
	if (due)
		hca_cq_event(cq);
}

enum hca_cq_arm hca_cq_arm_state(struct hca_cq *cq)
{
	u32 arm = be32_to_cpu(READ_ONCE(cq->dbr->arm));
	u32 cmd = arm & SOFTHCA_CQ_DB_CMD_MASK;
	u8 sn = (arm >> SOFTHCA_CQ_DB_SN_SHIFT) & SOFTHCA_CQ_DB_SN_MASK;

	/* An arm fires once per arm_sn (hca_cq_arm_due()). */
	if (cq->overrun || (cq->fired && cq->fired_sn == sn))
		return HCA_CQ_ARM_NONE;
	if (cmd == SOFTHCA_CQ_DB_REQ_NOT)
		return HCA_CQ_ARM_NEXT;
	if (cmd == SOFTHCA_CQ_DB_REQ_NOT_SOL)
		return HCA_CQ_ARM_SOLICITED;
	return HCA_CQ_ARM_NONE;
}

/* The CQ just entered error (overrun): IBV_EVENT_CQ_ERR. */
static void hca_cq_error(struct hca_cq *cq)
{
	hca_eq_cq_error(cq->hca, cq->cqn, SOFTHCA_CQ_ERROR_SYNDROME_OVERRUN);
}

/* "send" / "receive" for an error CQE, NULL for any other. */
static const char *hca_cqe_err_queue(const struct softhca_cqe *cqe)
{
	switch (cqe->op_own >> SOFTHCA_CQE_OPCODE_SHIFT) {
	case SOFTHCA_CQE_REQ_ERR:	return "send";
	case SOFTHCA_CQE_RESP_ERR:	return "receive";
	default:			return NULL;
	}
}

static bool hca_cqe_solicits(const struct softhca_cqe *cqe)
{
	return (cqe->op_own & SOFTHCA_CQE_SE) || softhca_cqe_kind(cqe)->error;
}

static void hca_put_be_pair(__be32 *h, __be32 *l, u64 v)
{
	*h = cpu_to_be32(v >> 32);
	*l = cpu_to_be32((u32)v);
}

/*
 * Stamp @slot with the clocks its CQ asked for, at the moment it is
 * written: one clock read, the wall clock derived from it (the offset
 * timekeeping keeps), so both name the same instant. Only such CQs pay.
 */
static void hca_cqe_stamp(struct hca_cq *cq, struct softhca_cqe *slot,
			  const struct softhca_cqe *cqe)
{
	u64 now = hca_read_clock(cq->hca);

	if (cq->ts & HCA_CQ_TS) {
		if (softhca_cqe_kind(cqe)->error)
			hca_put_be_pair(&slot->err_timestamp_h,
					&slot->err_timestamp_l, now);
		else
			hca_put_be_pair(&slot->timestamp_h, &slot->timestamp_l,
					now);
	}
	if (cq->ts & HCA_CQ_TS_WALLCLOCK)
		hca_put_be_pair(&slot->timestamp_real_h,
				&slot->timestamp_real_l,
				ktime_to_ns(ktime_mono_to_real(ns_to_ktime(now))));
}

int hca_cqe_write(struct hca_cq *cq, const struct softhca_cqe *cqe)
{
	u32 cnt = 1U << cq->log_size;
	struct softhca_cqe *slot;
	bool due;
	u32 pi, ci;

	spin_lock(&cq->lock);
	if (unlikely(cq->overrun)) {
		spin_unlock(&cq->lock);
		return -ENOSPC;
	}
	pi = cq->pi;
	/*
	 * Entries pi - cnt and older must have been consumed. set_ci is the
	 * provider's 24-bit consumer index; one that claims more than was
	 * produced makes the distance huge, which is an overrun too. The
	 * stores below depend on this load (control dependency), so the slot
	 * is not overwritten before the consumer said it was done with it.
	 */
	ci = be32_to_cpu(READ_ONCE(cq->dbr->set_ci)) & SOFTHCA_CQ_DB_CI_MASK;
	if (unlikely(((pi - ci) & SOFTHCA_CQ_DB_CI_MASK) >= cnt)) {
		cq->overrun = true;
		spin_unlock(&cq->lock);
		hca_dbg_cq(cq, "overrun: %u CQEs written, consumer at %u of %u: CQ in error\n",
			   pi, ci, cnt);
		atomic64_inc(&cq->hca->cq_overruns);
		hca_cq_error(cq);
		return -ENOSPC;
	}

	slot = &cq->ring[pi & (cnt - 1)];
	hca_copy(slot, cqe, offsetof(struct softhca_cqe, op_own));
	if (unlikely(cq->ts))
		hca_cqe_stamp(cq, slot, cqe);
	/* The whole CQE (and the data it reports) before its owner byte. */
	smp_wmb();
	WRITE_ONCE(slot->op_own, (cqe->op_own & ~SOFTHCA_CQE_OWNER_MASK) |
				 ((pi & cnt) ? 1 : 0));
	/* The period of moderation runs from here. */
	if (unlikely(cq->mod_period) && pi == cq->ev_pi)
		cq->ev_first_ns = ktime_get_ns();
	cq->pi = pi + 1;
	if (hca_cqe_solicits(cqe)) {
		cq->sol_seen = true;
		cq->sol_pi = pi + 1;
		/* Here, so that no other CQE pays for the check. */
		if (hca_cqe_err_queue(cqe))
			hca_dbg_cq(cq, "error CQE: QP[%u] %s WQE %u: %s (syndrome 0x%02x, vendor 0x%02x)\n",
				   be32_to_cpu(cqe->sop_drop_qpn) &
				   SOFTHCA_24BIT_MASK, hca_cqe_err_queue(cqe),
				   be16_to_cpu(cqe->wqe_counter),
				   hca_syndrome_name(cqe->syndrome),
				   cqe->syndrome, cqe->vendor_err_synd);
	}
	/*
	 * The owner byte before the arm load; pairs with the provider's full
	 * barrier between its arm store and its look at the next CQE: either
	 * we see the arm, or the provider sees this CQE and has it evaluated.
	 */
	smp_mb();
	due = hca_cq_arm_check(cq);
	spin_unlock(&cq->lock);
	if (due)
		hca_cq_event(cq);
	return 0;
}

/*
 * RESIZE (MODIFY_CQ): move the CQEs not yet consumed to the start of the
 * new ring and rebase every index on the consumer's, so that the new
 * record's set_ci (0) is where the provider resumes. Differences between
 * the indexes are what the arm logic compares, and they are kept. Under
 * cq->lock, so no CQE is written meanwhile. The old ring and record are
 * the provider's memory: set_ci and the arm word are only used as
 * offsets, and a set_ci that claims more CQEs than exist is refused.
 */
int hca_cq_resize(struct hca_cq *cq, const struct hca_cmd_modify_cq_in *in,
		  u32 *moved)
{
	u32 old_cnt = 1U << cq->log_size, new_cnt = 1U << in->log_size;
	u32 ci, n, i, arm, arm_ci;
	struct softhca_cqe *src, *dst;

	ci = be32_to_cpu(READ_ONCE(cq->dbr->set_ci)) & SOFTHCA_CQ_DB_CI_MASK;
	n = (cq->pi - ci) & SOFTHCA_CQ_DB_CI_MASK;
	/* One slot stays empty, so a full ring never looks empty. */
	if (n > old_cnt || n >= new_cnt)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		src = &cq->ring[(ci + i) & (old_cnt - 1)];
		dst = &in->ring[i];
		hca_copy(dst, src, offsetof(struct softhca_cqe, op_own));
		/* Lap 0 of the new ring: owner bit 0. */
		dst->op_own = READ_ONCE(src->op_own) & ~SOFTHCA_CQE_OWNER_MASK;
	}
	arm = be32_to_cpu(READ_ONCE(cq->dbr->arm));
	arm_ci = ((arm & SOFTHCA_CQ_DB_CI_MASK) - ci) & SOFTHCA_CQ_DB_CI_MASK;
	arm = (arm & ~SOFTHCA_CQ_DB_CI_MASK) | arm_ci;
	WRITE_ONCE(in->dbr->arm, cpu_to_be32(arm));
	WRITE_ONCE(cq->arm_seen, cpu_to_be32(arm));
	cq->ev_pi = n - (cq->pi - cq->ev_pi);
	cq->sol_pi = n - (cq->pi - cq->sol_pi);
	cq->pi = n;
	cq->ring = in->ring;
	cq->dbr = in->dbr;
	cq->log_size = in->log_size;
	*moved = n;
	return 0;
}
