// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: the BTH opcodes of the wire (IBTA Vol 1 Table 38).
 * One row per opcode softhca sends or takes: every RC operation of enum
 * hca_wire_op, the same for XRC, UC's SENDs and WRITEs and UD's
 * SEND_ONLY / SEND_ONLY_IMM.
 * A row says the name
 * Wireshark prints, the extension headers after the BTH and what kind of
 * packet it is; the packet layer (wire_pkt.c) builds and checks headers
 * from these rows only. An opcode without a row (RD, CNP, anything else)
 * is dropped on receive. RoCEv2's CNP (Annex A17.9.3) has a row of its own.
 */
#include <linux/build_bug.h>
#include <linux/kernel.h>

#include "wire.h"

#define RC(op)	(HCA_WIRE_TP_RC | HCA_WOP_##op)
#define UC(op)	(HCA_WIRE_TP_UC | HCA_WOP_##op)
#define UD(op)	(HCA_WIRE_TP_UD | HCA_WOP_##op)
#define XRC(op)	(HCA_WIRE_TP_XRC | HCA_WOP_##op)

#define ROW(code, name_, hdrs_, flags_)					\
	[code] = { .name = name_, .hdrs = (hdrs_), .flags = (flags_) }

#define REQ_SEND	(HCA_WF_REQUEST | HCA_WF_SEND | HCA_WF_PAYLOAD)
#define REQ_WRITE	(HCA_WF_REQUEST | HCA_WF_WRITE | HCA_WF_PAYLOAD)
#define RESP_READ	(HCA_WF_RESPONSE | HCA_WF_READ | HCA_WF_PAYLOAD)

static const struct hca_wire_opcode hca_wire_opcodes[256] = {
	ROW(RC(SEND_FIRST), "RC Send First", 0, REQ_SEND | HCA_WF_FIRST),
	ROW(RC(SEND_MIDDLE), "RC Send Middle", 0, REQ_SEND | HCA_WF_MIDDLE),
	ROW(RC(SEND_LAST), "RC Send Last", 0, REQ_SEND | HCA_WF_LAST),
	ROW(RC(SEND_LAST_IMM), "RC Send Last Immediate", HCA_WH_IMM,
	    REQ_SEND | HCA_WF_LAST),
	ROW(RC(SEND_ONLY), "RC Send Only", 0, REQ_SEND | HCA_WF_ONLY),
	ROW(RC(SEND_ONLY_IMM), "RC Send Only Immediate", HCA_WH_IMM,
	    REQ_SEND | HCA_WF_ONLY),
	ROW(RC(WRITE_FIRST), "RC RDMA Write First", HCA_WH_RETH,
	    REQ_WRITE | HCA_WF_FIRST),
	ROW(RC(WRITE_MIDDLE), "RC RDMA Write Middle", 0,
	    REQ_WRITE | HCA_WF_MIDDLE),
	ROW(RC(WRITE_LAST), "RC RDMA Write Last", 0, REQ_WRITE | HCA_WF_LAST),
	/* Consumes a receive WQE for its immediate. */
	ROW(RC(WRITE_LAST_IMM), "RC RDMA Write Last Immediate", HCA_WH_IMM,
	    REQ_WRITE | HCA_WF_SEND | HCA_WF_LAST),
	ROW(RC(WRITE_ONLY), "RC RDMA Write Only", HCA_WH_RETH,
	    REQ_WRITE | HCA_WF_ONLY),
	ROW(RC(WRITE_ONLY_IMM), "RC RDMA Write Only Immediate",
	    HCA_WH_RETH | HCA_WH_IMM, REQ_WRITE | HCA_WF_SEND | HCA_WF_ONLY),
	ROW(RC(READ_REQ), "RC RDMA Read Request", HCA_WH_RETH,
	    HCA_WF_REQUEST | HCA_WF_READ | HCA_WF_ONLY),
	ROW(RC(READ_RESP_FIRST), "RC RDMA Read Response First", HCA_WH_AETH,
	    RESP_READ | HCA_WF_FIRST),
	ROW(RC(READ_RESP_MIDDLE), "RC RDMA Read Response Middle", 0,
	    RESP_READ | HCA_WF_MIDDLE),
	ROW(RC(READ_RESP_LAST), "RC RDMA Read Response Last", HCA_WH_AETH,
	    RESP_READ | HCA_WF_LAST),
	ROW(RC(READ_RESP_ONLY), "RC RDMA Read Response Only", HCA_WH_AETH,
	    RESP_READ | HCA_WF_ONLY),
	ROW(RC(ACK), "RC Acknowledge", HCA_WH_AETH,
	    HCA_WF_RESPONSE | HCA_WF_ONLY),
	ROW(RC(ATOMIC_ACK), "RC Atomic Acknowledge",
	    HCA_WH_AETH | HCA_WH_ATOMACK,
	    HCA_WF_RESPONSE | HCA_WF_ATOMIC | HCA_WF_ONLY),
	ROW(RC(CMP_SWAP), "RC CmpSwap", HCA_WH_ATOMIC,
	    HCA_WF_REQUEST | HCA_WF_ATOMIC | HCA_WF_ONLY),
	ROW(RC(FETCH_ADD), "RC FetchAdd", HCA_WH_ATOMIC,
	    HCA_WF_REQUEST | HCA_WF_ATOMIC | HCA_WF_ONLY),
	ROW(RC(SEND_LAST_INV), "RC Send Last Invalidate", HCA_WH_IETH,
	    REQ_SEND | HCA_WF_LAST),
	ROW(RC(SEND_ONLY_INV), "RC Send Only Invalidate", HCA_WH_IETH,
	    REQ_SEND | HCA_WF_ONLY),
	/* UC: RC's SENDs and WRITEs, nothing else (IBTA Table 38). */
	ROW(UC(SEND_FIRST), "UC Send First", 0, REQ_SEND | HCA_WF_FIRST),
	ROW(UC(SEND_MIDDLE), "UC Send Middle", 0, REQ_SEND | HCA_WF_MIDDLE),
	ROW(UC(SEND_LAST), "UC Send Last", 0, REQ_SEND | HCA_WF_LAST),
	ROW(UC(SEND_LAST_IMM), "UC Send Last Immediate", HCA_WH_IMM,
	    REQ_SEND | HCA_WF_LAST),
	ROW(UC(SEND_ONLY), "UC Send Only", 0, REQ_SEND | HCA_WF_ONLY),
	ROW(UC(SEND_ONLY_IMM), "UC Send Only Immediate", HCA_WH_IMM,
	    REQ_SEND | HCA_WF_ONLY),
	ROW(UC(WRITE_FIRST), "UC RDMA Write First", HCA_WH_RETH,
	    REQ_WRITE | HCA_WF_FIRST),
	ROW(UC(WRITE_MIDDLE), "UC RDMA Write Middle", 0,
	    REQ_WRITE | HCA_WF_MIDDLE),
	ROW(UC(WRITE_LAST), "UC RDMA Write Last", 0, REQ_WRITE | HCA_WF_LAST),
	ROW(UC(WRITE_LAST_IMM), "UC RDMA Write Last Immediate", HCA_WH_IMM,
	    REQ_WRITE | HCA_WF_SEND | HCA_WF_LAST),
	ROW(UC(WRITE_ONLY), "UC RDMA Write Only", HCA_WH_RETH,
	    REQ_WRITE | HCA_WF_ONLY),
	ROW(UC(WRITE_ONLY_IMM), "UC RDMA Write Only Immediate",
	    HCA_WH_RETH | HCA_WH_IMM, REQ_WRITE | HCA_WF_SEND | HCA_WF_ONLY),
	/*
	 * XRC (IBTA Annex A14): RC's operations, the requests with the
	 * XRCETH (the target's SRQ) right after the BTH.
	 */
	ROW(XRC(SEND_FIRST), "XRC Send First",
	    HCA_WH_XRCETH, REQ_SEND | HCA_WF_FIRST),
	ROW(XRC(SEND_MIDDLE), "XRC Send Middle",
	    HCA_WH_XRCETH, REQ_SEND | HCA_WF_MIDDLE),
	ROW(XRC(SEND_LAST), "XRC Send Last",
	    HCA_WH_XRCETH, REQ_SEND | HCA_WF_LAST),
	ROW(XRC(SEND_LAST_IMM), "XRC Send Last Immediate",
	    HCA_WH_XRCETH | HCA_WH_IMM, REQ_SEND | HCA_WF_LAST),
	ROW(XRC(SEND_ONLY), "XRC Send Only",
	    HCA_WH_XRCETH, REQ_SEND | HCA_WF_ONLY),
	ROW(XRC(SEND_ONLY_IMM), "XRC Send Only Immediate",
	    HCA_WH_XRCETH | HCA_WH_IMM, REQ_SEND | HCA_WF_ONLY),
	ROW(XRC(WRITE_FIRST), "XRC RDMA Write First",
	    HCA_WH_XRCETH | HCA_WH_RETH, REQ_WRITE | HCA_WF_FIRST),
	ROW(XRC(WRITE_MIDDLE), "XRC RDMA Write Middle",
	    HCA_WH_XRCETH, REQ_WRITE | HCA_WF_MIDDLE),
	ROW(XRC(WRITE_LAST), "XRC RDMA Write Last",
	    HCA_WH_XRCETH, REQ_WRITE | HCA_WF_LAST),
	ROW(XRC(WRITE_LAST_IMM), "XRC RDMA Write Last Immediate",
	    HCA_WH_XRCETH | HCA_WH_IMM, REQ_WRITE | HCA_WF_SEND | HCA_WF_LAST),
	ROW(XRC(WRITE_ONLY), "XRC RDMA Write Only",
	    HCA_WH_XRCETH | HCA_WH_RETH, REQ_WRITE | HCA_WF_ONLY),
	ROW(XRC(WRITE_ONLY_IMM), "XRC RDMA Write Only Immediate",
	    HCA_WH_XRCETH | HCA_WH_RETH | HCA_WH_IMM,
	    REQ_WRITE | HCA_WF_SEND | HCA_WF_ONLY),
	ROW(XRC(READ_REQ), "XRC RDMA Read Request",
	    HCA_WH_XRCETH | HCA_WH_RETH,
	    HCA_WF_REQUEST | HCA_WF_READ | HCA_WF_ONLY),
	ROW(XRC(READ_RESP_FIRST), "XRC RDMA Read Response First",
	    HCA_WH_AETH, RESP_READ | HCA_WF_FIRST),
	ROW(XRC(READ_RESP_MIDDLE), "XRC RDMA Read Response Middle",
	    0, RESP_READ | HCA_WF_MIDDLE),
	ROW(XRC(READ_RESP_LAST), "XRC RDMA Read Response Last",
	    HCA_WH_AETH, RESP_READ | HCA_WF_LAST),
	ROW(XRC(READ_RESP_ONLY), "XRC RDMA Read Response Only",
	    HCA_WH_AETH, RESP_READ | HCA_WF_ONLY),
	ROW(XRC(ACK), "XRC Acknowledge",
	    HCA_WH_AETH, HCA_WF_RESPONSE | HCA_WF_ONLY),
	ROW(XRC(ATOMIC_ACK), "XRC Atomic Acknowledge",
	    HCA_WH_AETH | HCA_WH_ATOMACK,
	    HCA_WF_RESPONSE | HCA_WF_ATOMIC | HCA_WF_ONLY),
	ROW(XRC(CMP_SWAP), "XRC CmpSwap",
	    HCA_WH_XRCETH | HCA_WH_ATOMIC,
	    HCA_WF_REQUEST | HCA_WF_ATOMIC | HCA_WF_ONLY),
	ROW(XRC(FETCH_ADD), "XRC FetchAdd",
	    HCA_WH_XRCETH | HCA_WH_ATOMIC,
	    HCA_WF_REQUEST | HCA_WF_ATOMIC | HCA_WF_ONLY),
	ROW(XRC(SEND_LAST_INV), "XRC Send Last Invalidate",
	    HCA_WH_XRCETH | HCA_WH_IETH, REQ_SEND | HCA_WF_LAST),
	ROW(XRC(SEND_ONLY_INV), "XRC Send Only Invalidate",
	    HCA_WH_XRCETH | HCA_WH_IETH, REQ_SEND | HCA_WF_ONLY),
	ROW(UD(SEND_ONLY), "UD Send Only", HCA_WH_DETH, REQ_SEND | HCA_WF_ONLY),
	ROW(UD(SEND_ONLY_IMM), "UD Send Only Immediate",
	    HCA_WH_DETH | HCA_WH_IMM, REQ_SEND | HCA_WF_ONLY),
	ROW(HCA_WIRE_OP_CNP, "CNP", HCA_WH_CNP, HCA_WF_CNP),
};

/* Rows: 23 RC operations (enum hca_wire_op), 12 UC, 23 XRC, 2 UD, CNP. */
#define HCA_WIRE_RC_ROWS	23
#define HCA_WIRE_UC_ROWS	12
#define HCA_WIRE_XRC_ROWS	23
#define HCA_WIRE_UD_ROWS	2
#define HCA_WIRE_CNP_ROWS	1

const struct hca_wire_opcode *hca_wire_opcode(u8 opcode)
{
	const struct hca_wire_opcode *op = &hca_wire_opcodes[opcode];

	/* The table is indexed by every u8: no bounds to check. */
	BUILD_BUG_ON(ARRAY_SIZE(hca_wire_opcodes) != 256);
	/* Operations fit below the transport bits (Table 38). */
	BUILD_BUG_ON(HCA_WOP_SEND_ONLY_INV & HCA_WIRE_TP_MASK);
	return op->name ? op : NULL;
}

/* Rows of @tp (HCA_WIRE_TP_*): for the table's self-check at init. */
static unsigned int hca_wire_opcode_rows(u8 tp)
{
	unsigned int i, n = 0;

	for (i = 0; i < ARRAY_SIZE(hca_wire_opcodes); i++)
		n += hca_wire_opcodes[i].name &&
		     (i & HCA_WIRE_TP_MASK) == tp;
	return n;
}

/* Does the table have the rows its header promises? (wire_net.c, init) */
bool hca_wire_opcodes_ok(void)
{
	return hca_wire_opcode_rows(HCA_WIRE_TP_RC) == HCA_WIRE_RC_ROWS &&
	       hca_wire_opcode_rows(HCA_WIRE_TP_UC) == HCA_WIRE_UC_ROWS &&
	       hca_wire_opcode_rows(HCA_WIRE_TP_XRC) == HCA_WIRE_XRC_ROWS &&
	       hca_wire_opcode_rows(HCA_WIRE_TP_UD) == HCA_WIRE_UD_ROWS &&
	       hca_wire_opcode_rows(HCA_WIRE_TP_CNP) == HCA_WIRE_CNP_ROWS;
}
