/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softhca HCA model internals: the objects "firmware" keeps (MKeys, CQ and
 * QP contexts, the GID table, multicast groups) and the seams between the
 * command side (mkey.c, cq_ctx.c, qp_ctx.c, fabric.c) and the engine
 * (engine.c, requester.c, responder.c, ud.c, cqe.c). Nothing outside
 * kernel/hca/ includes this file.
 *
 * Ownership of fields: "cmd:" fields are written only by firmware commands
 * (under the object's lock where noted), "eng:" fields only by the engine.
 */
#ifndef HCA_HCA_MODEL_H
#define HCA_HCA_MODEL_H

#include <linux/completion.h>
#include <linux/idr.h>
#include <linux/kthread.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/xarray.h>
#include <asm/unaligned.h>
#include <rdma/softhca-queue.h>
#include <rdma/softhca-wqe.h>

#include "debug.h"
#include "hca.h"

/*
 * Copy @len bytes 8 at a time, then the tail: the engine's copies (WQEs,
 * CQEs, payloads). The kernel's memcpy() is "rep movsb" on ERMS CPUs,
 * which QEMU's TCG (the test VM) runs a byte per step: 137 ns for 64
 * bytes there against 24 ns for this loop; on hardware its start-up cost
 * is the most of a small copy.
 */
static inline void hca_copy(void *dst, const void *src, size_t len)
{
	const u8 *s = src;
	u8 *d = dst;

	for (; len >= 8; len -= 8, d += 8, s += 8)
		put_unaligned(get_unaligned((const u64 *)s), (u64 *)d);
	for (; len; len--)
		*d++ = *s++;
}

struct hca_mkey;
struct hca_cq;
struct hca_qp;
struct hca_db_area;
struct hca_wire_port;
struct hca_wire_stats;

/*
 * A Q counter set (counters.c). Its value is @left plus what its QPs have
 * counted, each QP's counts taken relative to its count when it joined:
 * joining subtracts that count from @left, leaving adds the count then
 * (modulo 2^64), so nothing the QP's engine counts is lost or counted
 * twice and the engine's counting needs no lock.
 */
struct hca_qcnt_set {
	u32 id;
	struct list_head qps;		/* via qp->qcnt_node */
	u64 left[HCA_QCNT_NUM];
};

struct hca {
	const struct hca_caps *caps;
	char name[HCA_NAME_MAX];	/* of debug messages (debug.h) */
	struct xarray pds;		/* PD number (1..max_pd) -> value */
	struct xarray uars;		/* UAR index -> struct hca_uar */
	struct xarray mkeys;		/* MKey index (key >> 8) -> mkey */
	struct xarray cqs;		/* CQN -> cq */
	struct xarray qps;		/* QPN -> qp */
	struct xarray srqs;		/* SRQN -> srq */
	struct xarray xrcds;		/* XRCD number -> value: its users */
	struct hca_db_area *kernel_db;	/* doorbell area of kernel objects */
	struct page *device_page;	/* struct softhca_device_page */
	struct list_head fabric_node;	/* on the local fabric (fabric.c) */
	/* cmd: RoCE addresses (SET_ROCE_ADDRESS), under gid_lock */
	spinlock_t gid_lock;
	struct hca_gid_entry *gids;	/* caps->gid_tbl_len entries */
	u32 gid_end;			/* 1 + highest valid index, or 0 */
	/* cmd: allocation state (mkey.c, qp_ctx.c) */
	u8 *mkey_variant;		/* last variant byte of each MKey index */
	atomic64_t mkey_gen;		/* DESTROY_MKEYs so far: cache check */
	atomic64_t mkey_inval_timeouts;	/* mkey_fast.c: accesses outwaited */
	struct mutex mw_lock;		/* mkey_mw.c: binds and unbinds */
	u32 mkey_next;			/* xa_alloc_cyclic cursors */
	u32 cq_next;
	u32 qp_next;
	u32 srq_next;
	atomic64_t srq_ids;		/* hca_srq.id: never reused */
	atomic_t num_qps;		/* QPs created, at most caps->max_qp */
	/* cmd: Q counter sets and every QP's membership, under qcnt_lock */
	struct mutex qcnt_lock;
	struct xarray qcnts;		/* set id (1..max_q_counters) -> set */
	struct hca_qcnt_set qcnt_default;	/* set 0 */
	/* eng: HCA-wide counts (one per CQ's life: no hot path) */
	atomic64_t cq_overruns;
	atomic64_t rx_no_qp_drops;	/* datagrams no QP here took */
	/* HCA_HCNT_ODP_*, from HCA_HCNT_ODP_FIRST on (page faults: rare) */
	atomic64_t odp_cnt[HCA_HCNT_NUM - HCA_HCNT_ODP_FIRST];
	/* cmd: multicast attachments of this HCA's QPs (fabric.c's lock) */
	u32 mcast_groups;		/* groups with a QP of this HCA */
	u32 mcast_attached;		/* attachments of its QPs */
	/* The port on its netdev (wire_net.c), RCU; per-CPU wire counters. */
	struct hca_wire_port __rcu *wire;
	struct hca_wire_stats __percpu *wire_stats;
	/* eng: engine state of this HCA, see engine.c */
	struct hca_engine_dev *eng;	/* EQs, port state (eq_ctx.c) */
	struct hca_eq_dev *eqh;
};

/* ---- UARs and doorbell areas (hca.c, doorbell.c) ---------------------- */

/*
 * What a doorbell slot names (design.md §10): embedded in the QP or CQ that
 * owns the slot. The slot's engine thread is fixed at creation.
 */
enum hca_db_type {
	HCA_DB_QP = 1,
	HCA_DB_CQ,
};

struct hca_db_target {
	u8 type;			/* enum hca_db_type */
	u8 thread;			/* engine thread of the slot */
	u32 slot;
	struct hca_db_area *area;
};

/* Where an area stands with one engine thread (engine.c). */
enum hca_db_watch_state {
	HCA_DB_UNWATCHED,		/* NEED_WAKEUP up: the provider calls */
	HCA_DB_JOINING,			/* on the thread's join list */
	HCA_DB_WATCHED,			/* on the thread's watched list */
};

struct hca_db_watch {
	struct list_head node;		/* join or watched list of the thread */
	u8 state;			/* enum hca_db_watch_state, thread lock */
	s64 last_hint;			/* local_clock() of the last hint seen */
};

/*
 * The doorbell area of one UAR (or of the HCA's kernel objects): the page(s)
 * the provider writes hints into, and the model's trusted view of them:
 * which object owns which slot, and how far each thread's slots reach.
 */
struct hca_db_area {
	struct softhca_db_area *hint;	/* shared with the provider */
	struct hca *hca;
	struct mutex slot_lock;		/* slot allocation and release */
	u32 next_thread;		/* round robin of new slots, slot_lock */
	/* Groups in use per thread (1 + highest): where claims stop. */
	u32 groups[SOFTHCA_DB_MAX_THREADS];
	struct ida ida[SOFTHCA_DB_MAX_THREADS];
	/* Slot -> target, by group: RCU, written under slot_lock. */
	struct hca_db_target __rcu **chunk[SOFTHCA_DB_GROUPS];
	struct hca_db_watch watch[SOFTHCA_DB_MAX_THREADS];
};

/* A UAR: its page (the "BAR" the provider stores to) and doorbell area. */
struct hca_uar {
	u32 index;
	struct page *page;
	struct hca_db_area *db;
	struct rcu_head rcu;
};

/* CREATE_QP / CREATE_CQ: the area of @uar_index (HCA_UAR_KERNEL too). */
struct hca_db_area *hca_uar_db(struct hca *hca, u32 uar_index);

/* Engine threads the slots of every area are shared between (engine.c). */
extern unsigned int hca_engine_nr_threads;

struct hca_db_area *hca_db_area_create(struct hca *hca);
/* After hca_engine_area_fini(): no thread or caller looks at it any more. */
void hca_db_area_destroy(struct hca_db_area *a);
/*
 * Give @tgt a slot of @a (tgt->slot, tgt->thread), not yet visible to
 * claims; hca_db_publish() makes it so once the object is complete.
 * -ENOSPC when the area is full.
 */
int hca_db_slot_alloc(struct hca_db_area *a, struct hca_db_target *tgt,
		      enum hca_db_type type);
void hca_db_publish(struct hca_db_target *tgt);
/*
 * No claim finds @tgt after this (an RCU grace period later no lookup holds
 * it unreferenced); the slot is free again.
 */
void hca_db_slot_free(struct hca_db_target *tgt);
/* The engine thread whose range holds @slot. */
u32 hca_db_slot_thread(u32 slot);
/* Ring @slot's hint ourselves (kernel objects, a claim given back). */
void hca_db_ring(struct hca_db_area *a, u32 slot);
/*
 * Ring @slot of @a as a doorbell store would, and wake its engine thread
 * if it sleeps on the area (engine.c). Any context.
 */
void hca_area_doorbell(struct hca_db_area *a, u32 slot);
/*
 * Claim up to @max hints of thread @t in @a: each claimed hint's target
 * with a reference held (hca_db_target_put()) in @out. Hints beyond @max
 * are left (or put back) for the next claim. Returns how many were stored;
 * *@claimed counts every hint taken, those naming no object included.
 */
unsigned int hca_db_claim(struct hca_db_area *a, unsigned int t,
			  struct hca_db_target **out, unsigned int max,
			  unsigned int *claimed);
void hca_db_target_put(struct hca_db_target *tgt);
/* Is a hint of thread @t waiting in @a? One load. */
static inline bool hca_db_pending(const struct hca_db_area *a, unsigned int t)
{
	return READ_ONCE(a->hint->thread[t].pending);
}

static inline void hca_db_set_need_wakeup(struct hca_db_area *a,
					  unsigned int t, bool on)
{
	WRITE_ONCE(a->hint->thread[t].flags,
		   on ? SOFTHCA_ENGINE_NEED_WAKEUP : 0);
}

/* ---- MKeys (mkey.c) --------------------------------------------------- */

struct hca_mkey {
	u32 key;			/* index << 8 | variant byte */
	u32 pdn;
	u32 access;			/* HCA_ACCESS_* */
	u64 iova;
	u64 length;
	u64 offset;			/* of iova in pages[0] */
	unsigned int page_shift;
	unsigned long npages;
	struct page **pages;		/* the MTT; pinned by the driver */
	/*
	 * A fast-registration MKey (ib_alloc_mr): REG_MR WQEs fill the MTT
	 * (up to max_pages) while FREE and make it VALID; LOCAL_INV and a
	 * SEND with invalidate make it FREE again (mkey_fast.c). Every
	 * other MKey is VALID for good.
	 */
	u8 state;			/* enum hca_mkey_state */
	bool fast_reg;
	unsigned long max_pages;
	/*
	 * A memory window (mkey_mw.c): FREE until a BIND_MW WQE points it
	 * into a range of an MR (@parent, referenced while bound; pages and
	 * offset then index the MR's MTT); type 2 windows answer only QP
	 * @mw_qpn. An MR counts the windows bound to it in @mw_bound and
	 * cannot be destroyed while any is.
	 */
	u8 mw_type;			/* 0: not a window; 1 or 2 */
	u32 mw_qpn;
	struct hca_mkey *parent;
	atomic_t mw_bound;
	/*
	 * On-demand paging (mkey_odp.c): @pages is NULL and the MTT is
	 * @odp_mtt, entry k a page pointer | HCA_ODP_MTT_WRITE, absent until
	 * ODP_MAP. The engine counts its accesses in @odp_active from the
	 * check that found every page it needs until it lets them go;
	 * ODP_UNMAP raises @odp_unmapping, waits for them, then clears.
	 */
	bool odp;
	atomic_t odp_active;
	atomic_t odp_unmapping;
	struct xarray odp_mtt;
	refcount_t users;		/* lookups in flight + 1 */
	struct completion free;		/* users reached 0 */
	struct rcu_head rcu;
};

enum hca_mkey_state {
	HCA_MKEY_VALID,
	HCA_MKEY_FREE,
};

/*
 * A QP's pdn as the engine passes it to hca_mkey_get(): the PD number,
 * with HCA_PDN_RLKEY for a kernel QP (HCA_QP_PRIVILEGED), which may use
 * HCA_RESERVED_LKEY for local access (PD numbers stay below this bit).
 */
#define HCA_PDN_RLKEY		BIT(31)

/*
 * The page of MKey memory holding @va and @va's offset in it (@va was
 * bounds-checked by hca_mkey_get()). An MKey maps kernel pages (PAGE_SHIFT)
 * and @va's offset in them is offset + va - iova; the reserved lkey has no
 * pages: @va is a kernel virtual address in the direct map.
 */
struct page *hca_odp_page(struct hca_mkey *mkey, u64 off);

static inline struct page *hca_mkey_page(struct hca_mkey *mkey, u64 va,
					  size_t *pgoff)
{
	u64 off;

	if (unlikely(mkey->odp)) {
		off = va - mkey->iova + mkey->offset;
		*pgoff = off & ~PAGE_MASK;
		return hca_odp_page(mkey, off);
	}
	if (!mkey->pages) {
		*pgoff = offset_in_page(va);
		return virt_to_page((void *)(uintptr_t)va);
	}
	off = va - mkey->iova + mkey->offset;
	*pgoff = off & ~PAGE_MASK;
	return mkey->pages[off >> PAGE_SHIFT];
}

/*
 * Look up @key and check it for an access of @len bytes at @va: the key
 * (variant byte included) must exist, belong to @pdn, grant every bit of
 * @access and cover [va, va + len). Returns the MKey with a reference held,
 * or an ERR_PTR: -ENOENT (no such key: protection error), -EACCES (PD or
 * rights), -ERANGE (bounds). Callable from the engine (atomic context ok).
 * HCA_RESERVED_LKEY: only with HCA_PDN_RLKEY in @pdn and local rights,
 * for direct-mapped kernel memory; else -ENOENT / -ERANGE.
 */
struct hca_mkey *hca_mkey_get(struct hca *hca, u32 key, u32 pdn,
				    u32 access, u64 va, u64 len);

static inline void hca_mkey_put(struct hca_mkey *mkey)
{
	if (refcount_dec_and_test(&mkey->users))
		complete(&mkey->free);
}

/*
 * The last MKey one side of a QP used, while no MKey of its HCA was
 * destroyed since (@gen). No reference is kept: the pointer is used only
 * while @gen is current, under RCU (DESTROY_MKEY counts the change after
 * the erase and frees after a grace period), as a route (fabric.c).
 */
struct hca_mkey_cache {
	struct hca_mkey *mkey;
	u64 gen;
};

/*
 * mkey_fast.c, from the requester (REG_MR, LOCAL_INV WQEs of a QP of
 * @pdn) and the responder (a SEND with invalidate): 0, or -EINVAL for a
 * key that is not a fast-registration MKey of @pdn or a malformed
 * registration, -EBUSY for a REG_MR of an MKey that is not FREE.
 */
struct hca_fast_reg {
	u32 key;			/* the new key: index, key byte */
	u32 access;			/* HCA_ACCESS_* */
	u64 iova;
	u64 length;
	u32 page_shift;
	u32 npages;
	const __be64 *list;		/* npages kernel addresses of pages */
};

int hca_mkey_fast_reg(struct hca *hca, u32 pdn, const struct hca_fast_reg *r);
int hca_mkey_invalidate(struct hca *hca, u32 pdn, u32 qpn, u32 key);

/*
 * mkey_mw.c: a BIND_MW WQE of QP @qpn (of @pdn): 0, or -EINVAL / -EACCES
 * / -ERANGE for a bind the window, the MR or the rights refuse.
 */
struct hca_mw_bind {
	u32 mw_key;			/* the window's new key */
	u32 mr_lkey;
	u64 addr;
	u64 length;			/* 0: unbind (type 1) */
	u32 access;			/* HCA_ACCESS_REMOTE_* */
	bool zero_based;
};

int hca_mw_bind(struct hca *hca, u32 pdn, u32 qpn, const struct hca_mw_bind *b);
/* Invalidate type 2 window @mw (LOCAL_INV, SEND_WITH_INV) of QP @qpn. */
int hca_mw_invalidate(struct hca *hca, struct hca_mkey *mw, u32 pdn, u32 qpn,
		      u32 key);
/* DESTROY_MKEY of a window, once no access is left: its binding goes. */
void hca_mw_release(struct hca *hca, struct hca_mkey *mw);
/* May QP @qpn access through @mkey (type 2 windows answer one QP)? */
static inline bool hca_mkey_qp_ok(const struct hca_mkey *mkey, u32 qpn)
{
	return likely(mkey->mw_type != 2) || mkey->mw_qpn == qpn;
}
/* mkey.c: the MKey at @key's index, whatever its key byte, referenced. */
struct hca_mkey *hca_mkey_get_index(struct hca *hca, u32 key);

/* Rights and bounds of @mkey for an access of @len bytes at @va. */
int hca_mkey_check(const struct hca_mkey *mkey, u32 pdn, u32 access,
		    u64 va, u64 len);

/*
 * hca_mkey_get() through @c, which the caller serialises. Inline: every
 * transfer looks up one or two keys, usually the ones it looked up last
 * time, and a hit costs no call and no walk of the MKey index.
 */
static inline struct hca_mkey *
hca_mkey_get_cached(struct hca *hca, struct hca_mkey_cache *c, u32 key,
		     u32 pdn, u32 access, u64 va, u64 len)
{
	struct hca_mkey *mkey;
	u64 gen;
	int err;

	rcu_read_lock_sched();
	/* Before the lookup's loads, as in hca_fabric_route(). */
	gen = atomic64_read_acquire(&hca->mkey_gen);
	mkey = c->mkey;
	if (mkey && c->gen == gen && READ_ONCE(mkey->key) == key &&
	    refcount_inc_not_zero(&mkey->users)) {
		rcu_read_unlock_sched();
		err = hca_mkey_check(mkey, pdn, access, va, len);
		if (unlikely(err)) {
			hca_mkey_put(mkey);
			return ERR_PTR(err);
		}
		return mkey;
	}
	rcu_read_unlock_sched();
	mkey = hca_mkey_get(hca, key, pdn, access, va, len);
	if (!IS_ERR(mkey) && key != HCA_RESERVED_LKEY) {
		c->mkey = mkey;
		c->gen = gen;
	}
	return mkey;
}

/*
 * On-demand paging (mkey_odp.c). An access to an ODP MKey begins with a
 * check that every page of [va, va + len) is present (and writable for
 * @access with a write right): 0 and the access counted in, until
 * hca_odp_end(); or -EAGAIN and @miss says what to fault in. A miss is
 * the range from the first page that is not there to the end of the
 * access.
 */
struct hca_odp_miss {
	u32 key;
	u32 len;
	u64 va;
	bool write;
};

int hca_odp_begin(struct hca_mkey *mkey, u64 va, u64 len, u32 access,
		  struct hca_odp_miss *miss);
void hca_odp_end(struct hca_mkey *mkey);

/* Copy a kernel buffer into MKey-described memory (an atomic's result);
 * bounds checked by hca_mkey_get() before. May not sleep.
 */
void hca_mkey_write(struct hca_mkey *mkey, u64 va, const void *buf,
		     size_t len);
/* 8-byte atomics on MKey memory (va 8-byte aligned); return the old value. */
u64 hca_mkey_atomic_cas(struct hca_mkey *mkey, u64 va, u64 cmp, u64 swp);
u64 hca_mkey_atomic_fadd(struct hca_mkey *mkey, u64 va, u64 add);

/* ---- CQs (cq_ctx.c: contexts; cqe.c: the one CQE writer) ------------------ */

struct hca_cq {
	u32 cqn;
	u32 log_size;			/* ring of 1 << log_size CQEs */
	struct softhca_cqe *ring;	/* kernel address of the ring */
	struct softhca_cq_dbr *dbr;	/* kernel address; set_ci is a hint */
	u32 eqn;			/* completion EQ of its events */
	struct hca *hca;
	refcount_t users;
	struct completion free;
	struct rcu_head rcu;
	struct hca_db_target db;	/* rung by an arm finding CQEs waiting */
	u32 ts;				/* HCA_CQ_TS*: stamp its CQEs (cqe.c) */
	/* eng: producer and notification state, under lock (cqe.c) */
	spinlock_t lock;
	u32 pi;				/* CQEs written so far */
	bool overrun;			/* in error: no more CQEs */
	bool fired;			/* an event was raised for fired_sn */
	u8 fired_sn;			/* arm_sn of the arm that last fired */
	u32 ev_pi;			/* pi when the last event was raised (0) */
	bool sol_seen;			/* sol_pi is valid */
	u32 sol_pi;			/* pi after the last solicited/error CQE */
	__be32 arm_seen;		/* the arm word last evaluated (lockless hint) */
	bool ev_lost;			/* its EQ dropped its event (full) */
	/* eng: MODIFY_CQ moderation (0: that bound off), under lock */
	u16 mod_count;			/* pending CQEs that make an event due */
	u16 mod_period;			/* us after ev_first_ns that make it due */
	u64 ev_first_ns;		/* first CQE written after the last event */
	bool dying;			/* DESTROY_CQ: no timer may start */
	struct hrtimer mod_timer;	/* rings the CQ's slot when period ends */
};

struct hca_cq *hca_cq_get(struct hca *hca, u32 cqn);
void hca_cq_put(struct hca_cq *cq);

/*
 * Write one CQE (everything but op_own's owner bit, which the writer sets
 * from pi). Detects overrun against the consumer index the provider left in
 * the DBR (a hint, bounded): on overrun the CQ enters error, no CQE is
 * written and -ENOSPC is returned so the caller errors its QP.
 */
int hca_cqe_write(struct hca_cq *cq, const struct softhca_cqe *cqe);

/*
 * The CQ's doorbell slot rang (an arm found CQEs waiting): evaluate the arm
 * word against the CQEs not yet consumed and raise the completion event if
 * it is due (an arm that finds unconsumed CQEs fires at once).
 */
void hca_cq_arm_poll(struct hca_cq *cq);

/* cqe.c: the moderation timer's callback, and RESIZE's move of the CQEs. */
enum hrtimer_restart hca_cq_mod_timer(struct hrtimer *t);
int hca_cq_resize(struct hca_cq *cq, const struct hca_cmd_modify_cq_in *in,
		  u32 *moved);
/* What the arm word in the record asks for now (QUERY_CQ); under cq->lock. */
enum hca_cq_arm hca_cq_arm_state(struct hca_cq *cq);

/* ---- SRQs (srq_ctx.c: contexts; rq_src.c: taking WQEs) ------------------ */

/*
 * A shared receive queue. The ring and doorbell record are untrusted
 * memory the provider writes; @head and @taken are the HCA's own. QPs
 * attached hold a reference (@qps counts them, DESTROY_SRQ refuses while
 * any is), lookups one each.
 */
struct hca_srq {
	u32 srqn;
	u32 pdn;			/* with HCA_PDN_RLKEY for a kernel SRQ */
	struct hca *hca;
	void *buf;
	u32 wqe_cnt;			/* power of two */
	u32 wqe_shift;
	struct softhca_srq_dbr *dbr;
	refcount_t users;
	struct completion free;
	struct rcu_head rcu;
	atomic_t qps;
	/* eng: what the HCA took, under lock (any responder, any thread) */
	spinlock_t lock;
	u16 head;			/* the next WQE to take */
	u16 taken;			/* WQEs taken, free-running */
	u16 limit;			/* armed limit (ARM_RQ), 0: none */
	bool error;			/* a bad next index: takes no more */
	/* cmd: an XRC SRQ's domain and CQ (a reference), or 0 and NULL */
	u32 xrcdn;
	struct hca_cq *cq;
	/* cmd: unique for the HCA's life (an SRQN is reused, this is not) */
	u64 id;
};

struct hca_srq *hca_srq_get(struct hca *hca, u32 srqn);
void hca_srq_put(struct hca_srq *srq);
int hca_cmd_create_srq(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_destroy_srq(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_query_srq(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_arm_rq(struct hca *hca, const void *inbox, void *outbox);

/*
 * XRC domains (srq_ctx.c): a user more (an XRC SRQ or target QP naming
 * @xrcdn; -EINVAL if it was never allocated), or one less.
 */
int hca_xrcd_hold(struct hca *hca, u32 xrcdn);
/*
 * An XRC target takes the request in hand into SRQ @srqn (under its
 * resp_lock): false if no such SRQ of its domain is there, or, for the
 * packet @next in sequence, another than the one whose WQE it holds (a
 * duplicate of an earlier message may name any); then leaves it.
 */
bool hca_rq_xrc_enter(struct hca_qp *qp, u32 srqn, bool next);
void hca_rq_xrc_leave(struct hca_qp *qp);
void hca_xrcd_release(struct hca *hca, u32 xrcdn);
int hca_cmd_alloc_xrcd(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_dealloc_xrcd(struct hca *hca, const void *inbox, void *outbox);

/* ---- QPs (qp_ctx.c: contexts and state; engine: execution) ---------------- */

/*
 * What one QP service type is: a row of qp_ctx.c's hca_qp_types[], by
 * enum hca_qp_st. The transport its send queue runs (SOFTHCA_TP_*: which
 * opcodes it posts, by the opcode table, and which engine stage executes
 * them: requester.c for RC and UC, ud.c for datagrams), the attributes MODIFY_QP
 * may set, the state a send queue error leaves it in, and for a special
 * QP (GSI) its fixed QPN and that only the kernel creates it.
 */
struct hca_qp_type {
	const char *name;
	u8 tp;				/* SOFTHCA_TP_* */
	u8 sq_err_state;		/* ERR, or SQE: the RQ goes on (UD) */
	bool privileged;		/* needs HCA_QP_PRIVILEGED */
	bool mcast;			/* may join multicast groups */
	bool sends_rung_at_destroy;	/* DESTROY_QP sends what rang first */
	/*
	 * No acknowledgements (UC): the requester completes a message once
	 * it is sent; a responder that cannot take it drops it silently
	 * (IBA 9.9.3 class D) and the requester never hears.
	 */
	bool unreliable;
	/*
	 * XRC: an initiator only sends (no RQ, no receive CQ); a target
	 * only receives (an SQ nobody rings, no CQs), each message into the
	 * SRQ of its own domain that the request's XRCETH names, which
	 * supplies the receive WQE, the CQ and the PD its rkeys check.
	 */
	bool send_only;
	bool xrc_tgt;
	/* The type a request from this one must reach (RC: RC). */
	const struct hca_qp_type *peer;
	u32 qpn;			/* its one QPN, or 0: allocated */
	u32 attrs;			/* HCA_QP_ATTR_* it has */
};

struct hca_qp {
	u32 qpn;
	u32 pdn;
	struct hca *hca;
	const struct hca_qp_type *type;	/* cmd: fixed at CREATE_QP */
	struct hca_cq *send_cq;	/* references held */
	struct hca_cq *recv_cq;
	/* cmd: queue memory, fixed at CREATE_QP */
	void *sq_buf;			/* sq_wqebb_cnt * 64 bytes */
	u32 sq_wqebb_cnt;		/* power of two, >= 1 */
	void *rq_buf;
	u32 rq_wqe_cnt;			/* power of two, or 0: no RQ */
	u32 rq_wqe_shift;
	/* cmd: the granted send caps, checked on every send WQE */
	u32 sq_max_wqebbs;
	u32 max_send_sge;
	u32 max_inline_data;
	struct softhca_qp_dbr *dbr;
	u32 flags;			/* HCA_QP_* */
	refcount_t users;
	struct completion free;
	struct rcu_head rcu;
	u32 mcast_attached;		/* cmd: groups it is in (fabric.c's lock) */
	/* cmd: the Q counter set it counts in, under hca->qcnt_lock */
	struct hca_qcnt_set *qcnt;
	struct list_head qcnt_node;

	/* cmd: attributes and state, changed under lock */
	spinlock_t lock;
	enum hca_qp_state state;
	struct hca_qp_attrs attrs;	/* see hca.h MODIFY_QP */
	/*
	 * Bumped (release) with every change of attrs: the engine keeps
	 * copies of what it needs per WQE and refreshes them, under the
	 * lock, only when this moved.
	 */
	u32 attrs_gen;
	bool sqd_event;			/* SQ_DRAINED owed for this SQD */

	struct hca_db_target db;	/* its doorbell slot, fixed at CREATE_QP */
	/* eng: execution state, see engine.c (under lock unless noted) */
	struct hca_engine_qp *eng;
	/* Written by this QP's executor... */
	u16 sq_ci ____cacheline_aligned_in_smp;	/* next WQEBB to execute */
	bool sq_draining;		/* SQD and WQEs still outstanding */
	/* ...and by the peer's, as responder: a line each. */
	u16 rq_ci ____cacheline_aligned_in_smp;	/* next RQ WQE to take */
	/*
	 * Its SRQ (a reference; cmd: fixed at CREATE_QP), or NULL: the RQ
	 * source (rq_src.c). Under resp_lock: the SRQ WQE this QP took for
	 * the message in progress, until its CQE; LAST_WQE_REACHED raised.
	 */
	struct hca_srq *srq;
	bool srq_held;
	u16 srq_idx;
	bool srq_last_wqe;
	/*
	 * cmd: an XRC target's domain. Its @srq is the one the request in
	 * hand names (a reference, under resp_lock, responder.c), else NULL;
	 * a WQE it holds across packets (the wire) is of the SRQ @held_srqn
	 * whose id is @held_srq_id (no reference: the SRQ may go meanwhile).
	 */
	u32 xrcdn;
	u32 held_srqn;
	u64 held_srq_id;
};

struct hca_qp *hca_qp_get(struct hca *hca, u32 qpn);

static inline void hca_qp_put(struct hca_qp *qp)
{
	if (refcount_dec_and_test(&qp->users))
		complete(&qp->free);
}

/*
 * Engine hooks called by qp_ctx.c with qp->lock NOT held, after the state
 * changed: the engine starts polling an RTS QP's SQ, and on ERR flushes
 * every outstanding SQ and RQ WQE with WR_FLUSH_ERR CQEs; on RESET it
 * forgets the QP. Must not sleep long; may take qp->lock.
 */
void hca_engine_qp_state_changed(struct hca_qp *qp,
				  enum hca_qp_state old_state);
/*
 * Engine bookkeeping for a new / dying QP. May sleep.
 * CREATE_QP: the QPN is reserved (hca_qp_get() cannot find the QP yet),
 * every cmd field is set, state RESET, then hca_engine_qp_init(); on
 * success the QP is published.
 * DESTROY_QP: (0) a datagram QP's rung sends leave
 * (hca_engine_qp_send_rung()), (1) state -> RESET under qp->lock and
 * hca_engine_qp_state_changed(qp, old) (the engine forgets it, as on any
 * move to RESET: off its run and ERR lists, timer cancelled), (2) the QPN
 * is erased and the doorbell slot released (no new lookups), (3) wait until
 * every reference taken with hca_qp_get()/hca_fabric_find_qp() or by a
 * claim is put: the engine holds none for list membership, (4)
 * hca_engine_qp_fini(), (5) CQ references put, memory freed after an RCU
 * grace period. The driver frees the queue memory after DESTROY_QP returns.
 */
int hca_engine_qp_init(struct hca_qp *qp);
void hca_engine_qp_send_rung(struct hca_qp *qp);
void hca_engine_qp_fini(struct hca_qp *qp);

/* Engine of one HCA instance (engine.c). */
int hca_engine_init(struct hca *hca);
void hca_engine_fini(struct hca *hca);
/*
 * A doorbell area leaves the engine (FREE_UAR, HCA power-off): no thread
 * watches it and no claim runs on it when this returns. May sleep.
 */
void hca_engine_area_fini(struct hca_db_area *a);

/* ---- Firmware commands (dispatched by hca.c, may sleep) --------------- */

bool hca_pd_valid(struct hca *hca, u32 pdn);
/*
 * The firmware command handlers (hca.c's command table): @inbox and
 * @outbox are the command's structures, of the sizes the table checked
 * (NULL, or ignored, for a command without one).
 */
int hca_cmd_create_mkey(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_destroy_mkey(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_odp_map(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_odp_unmap(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_page_fault_resume(struct hca *hca, const void *inbox,
			      void *outbox);
/* HCA_HCNT_ODP_* into @value[0..] (mkey_odp.c). */
void hca_odp_counters(struct hca *hca, u64 *value);
int hca_cmd_create_cq(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_destroy_cq(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_create_qp(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_destroy_qp(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_modify_qp(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_query_qp(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_set_roce_address(struct hca *hca, const void *inbox,
			     void *outbox);
int hca_cmd_query_mkey(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_modify_mkey(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_query_cq(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_modify_cq(struct hca *hca, const void *inbox, void *outbox);

/* ---- Counters (counters.c) ---------------------------------------------- */

void hca_qcnt_init(struct hca *hca);
void hca_qcnt_fini(struct hca *hca);
/*
 * A new QP joins the default set (CREATE_QP, before it is published); a
 * dying one leaves its set once no executor can count for it any more
 * (DESTROY_QP, after the last reference, before hca_engine_qp_fini()).
 */
void hca_qcnt_qp_join(struct hca_qp *qp);
void hca_qcnt_qp_leave(struct hca_qp *qp);
/* The id of the set @qp counts in. */
u32 hca_qcnt_qp_id(struct hca_qp *qp);
int hca_cmd_alloc_q_counter(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_dealloc_q_counter(struct hca *hca, const void *inbox,
			      void *outbox);
int hca_cmd_query_q_counter(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_set_qp_counter(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_query_hca_counters(struct hca *hca, const void *inbox,
			       void *outbox);

/* ---- Local fabric (fabric.c) --------------------------------------------- */

/* hca.c: join / leave the local fabric (may sleep). */
void hca_fabric_add(struct hca *hca);
void hca_fabric_del(struct hca *hca);

/*
 * Find the QP that a packet to @dgid / @dqpn would reach on this host, with
 * a reference held, or NULL (nobody answers: the requester times out).
 */
struct hca_qp *hca_fabric_find_qp(const u8 dgid[16], u32 dqpn);

/*
 * A requester's last route: the QP @dgid / @dqpn reached, while no GID
 * table, instance or QP changed since (@gen). No reference is kept: the
 * pointer is used only while @gen is current, under RCU (a destroyed QP is
 * freed after a grace period that starts after its change was counted).
 */
struct hca_route {
	struct hca_qp *qp;
	u64 gen;
	u32 dqpn;
	u8 dgid[16];
};

/* Bumped by every change a cached route depends on. */
extern atomic64_t hca_fabric_gen;

struct hca_qp *hca_fabric_route_miss(struct hca_route *rt,
					   const u8 dgid[16], u32 dqpn, u64 gen);

/*
 * hca_fabric_find_qp() through @rt, which the caller serialises. Inline,
 * with the preempt-disabling RCU read side (also inline): every transfer
 * takes this path.
 */
static inline struct hca_qp *hca_fabric_route(struct hca_route *rt,
						    const u8 dgid[16], u32 dqpn)
{
	struct hca_qp *qp;
	u64 gen;

	rcu_read_lock_sched();
	/* Before the lookup's loads, so a route cached with @gen is not
	 * older than @gen.
	 */
	gen = atomic64_read_acquire(&hca_fabric_gen);
	qp = rt->qp;
	if (qp && rt->gen == gen && rt->dqpn == dqpn &&
	    !memcmp(rt->dgid, dgid, sizeof(rt->dgid)) &&
	    refcount_inc_not_zero(&qp->users)) {
		rcu_read_unlock_sched();
		return qp;
	}
	rcu_read_unlock_sched();
	return hca_fabric_route_miss(rt, dgid, dqpn, gen);
}

/* Something a route depends on changed (a GID, an instance, a QP gone). */
void hca_fabric_changed(void);

/*
 * Entry @index of @hca's RoCE address table into @out; false if it is not
 * valid. Any context.
 */
bool hca_fabric_gid(struct hca *hca, u32 index, struct hca_gid_entry *out);
/*
 * A datagram to @dgid / @dqpn found no QP: counted by the HCA owning
 * @dgid. False: no HCA of this host owns it (the wire's, then).
 */
bool hca_fabric_no_qp(const u8 dgid[16]);
/* Does @hca / any HCA of this host own @dgid? Any context. */
bool hca_fabric_owns_gid(struct hca *hca, const u8 gid[16]);
bool hca_fabric_owned(const u8 dgid[16]);

/* ATTACH_TO_MCG, DETACH_FROM_MCG; DESTROY_QP detaches from every group. */
int hca_cmd_attach_to_mcg(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_detach_from_mcg(struct hca *hca, const void *inbox, void *outbox);
void hca_fabric_mcast_detach_all(struct hca_qp *qp);
/* Is @gid a multicast GID (IPv6, or IPv4 mapped)? */
bool hca_gid_is_mcast(const u8 gid[16]);

/* ==== Event queues (eq_ctx.c) ============================================= */

struct hca_eq_dev;

/* hca.c: EQ state of an instance. Fini WARNs if an EQ was not destroyed. */
int hca_eq_init(struct hca *hca);
void hca_eq_fini(struct hca *hca);
/* Handlers of CREATE_EQ, DESTROY_EQ, QUERY_EQ, GEN_EQE, SET_PORT_STATE. */
int hca_cmd_create_eq(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_destroy_eq(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_query_eq(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_gen_eqe(struct hca *hca, const void *inbox, void *outbox);
int hca_cmd_set_port_state(struct hca *hca, const void *inbox, void *outbox);

/*
 * The EQE writer, for the engine and the commands. Every call is callable
 * from any context (no sleeping, irqs may be off, any model spinlock may be
 * held: the EQ's own lock is innermost and the MSI-X message is sent after
 * it is dropped). Each writes one EQE with the owner bit of its slot,
 * raises the EQ's vector if the EQ is armed, and returns 0, -EINVAL (no
 * such EQ; no EQ takes this async type) or -ENOSPC (EQ full: the EQE was
 * dropped and counted, see HCA_EVENT_TYPE_EQ_OVERFLOW).
 *
 * hca_eq_comp(): a completion event for CQ @cqn on its EQ @eqn (the CQ's
 * cq->eqn). The engine calls it once per arm, when an armed CQ's condition
 * is met (seed-map.md §5.3), after the CQE is visible. If the EQ is full it sets
 * *@lost (the CQ's ev_lost), under the EQ's lock; when the driver has
 * drained the EQ, the doorbell that ends the overflow resends the event of
 * every such CQ of that EQ (hca_cq_resend_lost()): one event per consumed
 * arm, none to a CQ that was not armed.
 */
int hca_eq_comp(struct hca *hca, u32 eqn, u32 cqn, bool *lost);
void hca_cq_resend_lost(struct hca *hca, u32 eqn);
/* CQ_ERROR on the async EQ (SOFTHCA_CQ_ERROR_SYNDROME_*). */
int hca_eq_cq_error(struct hca *hca, u32 cqn, u8 syndrome);
/* A QP event (SOFTHCA_EVENT_TYPE_WQ_CATAS_ERROR, _LAST_WQE_REACHED, ...;
 * @queue_type SOFTHCA_EVENT_QUEUE_TYPE_*) on the async EQ.
 */
int hca_eq_qp_event(struct hca *hca, u8 type, u32 qpn, u8 queue_type);
/* Any EQE: to EQ @eqn, or to the EQ that takes eqe->type. */
int hca_eq_post(struct hca *hca, u32 eqn,
		 const struct softhca_eqe *eqe);
int hca_eq_post_async(struct hca *hca, const struct softhca_eqe *eqe);
/*
 * An event its raiser raises again if refused (a PAGE_FAULT): posted only
 * while its EQ is less than half full, else -EBUSY, so that a burst of
 * them never overflows the async EQ (which would lose QP events for good).
 */
int hca_eq_post_soft(struct hca *hca, const struct softhca_eqe *eqe);
/* CREATE_CQ: is @eqn a completion EQ (created with event_mask 0)? */
bool hca_eq_is_comp(struct hca *hca, u32 eqn);

#endif /* HCA_HCA_MODEL_H */
