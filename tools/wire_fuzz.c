// SPDX-License-Identifier: GPL-2.0
/*
 * wire_fuzz: crafted RoCEv2 packets at a softhca port, from a raw IPv4
 * socket (IP_HDRINCL: every header byte is ours, so the ICRC of a
 * well-formed packet can be computed here). Classes, interleaved at
 * random: random bytes, a good packet cut short, a good packet with its
 * ICRC flipped, an opcode softhca does not take (RD), a BTH version that
 * is not 0, a UD SEND to a QPN nobody has, a UD SEND to QP1 with a wrong
 * Q_Key, a UD SEND to QP1 with the right Q_Key but longer than any of
 * ib_mad's receive buffers, and with -f a burst of packets to an unknown
 * QPN as fast as the socket takes them (the receive queue's bound).
 * Prints how many of each it sent; the test compares with the port's
 * drop counters (selftests/wire.sh).
 *
 *   wire_fuzz -s SRC_IPV4 -d DST_IPV4 [-n PACKETS] [-f BURST] [-S SEED]
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rocev2.h"

#define GSI_QKEY	0x80010000u
#define UD_SEND_ONLY	0x64
#define RD_SEND_ONLY	0x44	/* RD: a transport softhca has no rows for */
#define NO_SUCH_QPN	0xfedcbau
#define HDRS		ROCEV2_BTH_OFF

enum cls { RANDOM, TRUNCATED, BAD_ICRC, BAD_OPCODE, BAD_TVER, UNKNOWN_QPN,
	   BAD_QKEY, OVERSIZE, NCLS };

static const char *const cls_names[NCLS] = {
	"random", "truncated", "bad_icrc", "bad_opcode", "bad_tver",
	"unknown_qpn", "bad_qkey", "oversize",
};

static struct in_addr src, dst;

static size_t put_ip_udp(uint8_t *pkt, size_t len)
{
	return rocev2_ip_udp(pkt, src, dst, len);
}

/* A well-formed UD SEND_ONLY of @paylen bytes to @qpn with @qkey. */
static size_t good_ud(uint8_t *pkt, uint32_t qpn, uint32_t qkey,
		      size_t paylen)
{
	size_t pad = -paylen & 3, len = ROCEV2_BTH_LEN + ROCEV2_DETH_LEN +
					paylen + pad + ROCEV2_ICRC_LEN;
	size_t tot = put_ip_udp(pkt, len);
	uint8_t *b = pkt + HDRS;

	memset(b, 0, len);
	rocev2_bth(b, UD_SEND_ONLY, pad, qpn, rand(), 0);
	rocev2_put32(b + 12, qkey);
	rocev2_put32(b + 16, 0x42);	/* source QPN */
	for (size_t i = 0; i < paylen; i++)
		b[20 + i] = rand();
	rocev2_seal(pkt, tot);
	return tot;
}

static size_t craft(enum cls k, uint8_t *pkt)
{
	size_t tot, len;

	switch (k) {
	case RANDOM:
		len = rand() % 1200;
		tot = put_ip_udp(pkt, len);
		for (size_t i = HDRS; i < tot; i++)
			pkt[i] = rand();
		return tot;
	case TRUNCATED:
		tot = good_ud(pkt, 1, GSI_QKEY, 256);
		len = rand() % (tot - HDRS - 1);
		/* The UDP length says what is there: the RoCE part is short. */
		return put_ip_udp(pkt, len);
	case BAD_ICRC:
		tot = good_ud(pkt, 1, GSI_QKEY, 64);
		pkt[tot - 1 - rand() % 4] ^= 1 << (rand() % 8);
		return tot;
	case BAD_OPCODE:
		tot = good_ud(pkt, 1, GSI_QKEY, 64);
		pkt[HDRS] = RD_SEND_ONLY;
		rocev2_seal(pkt, tot);
		return tot;
	case BAD_TVER:
		tot = good_ud(pkt, 1, GSI_QKEY, 64);
		pkt[HDRS + 1] |= 1 + rand() % 15;
		rocev2_seal(pkt, tot);
		return tot;
	case UNKNOWN_QPN:
		return good_ud(pkt, NO_SUCH_QPN, GSI_QKEY, 64);
	case BAD_QKEY:
		return good_ud(pkt, 1, 0x12345678, 64);
	case OVERSIZE:
		return good_ud(pkt, 1, GSI_QKEY, 1024);
	default:
		return 0;
	}
}

static int send_pkt(int fd, const uint8_t *pkt, size_t tot)
{
	if (!rocev2_send(fd, pkt, tot))
		return 0;
	perror("sendto");
	return -1;
}

int main(int argc, char **argv)
{
	unsigned long n = 2000, burst = 0, sent[NCLS] = { 0 };
	unsigned int seed = time(NULL);
	uint8_t pkt[ROCEV2_PKT_MAX];
	int opt, fd;

	while ((opt = getopt(argc, argv, "s:d:n:f:S:")) != -1) {
		switch (opt) {
		case 's':
			if (!inet_aton(optarg, &src))
				return 2;
			break;
		case 'd':
			if (!inet_aton(optarg, &dst))
				return 2;
			break;
		case 'n':
			n = strtoul(optarg, NULL, 0);
			break;
		case 'f':
			burst = strtoul(optarg, NULL, 0);
			break;
		case 'S':
			seed = strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: %s -s SRC -d DST [-n N] [-f BURST] [-S SEED]\n",
				argv[0]);
			return 2;
		}
	}
	if (!src.s_addr || !dst.s_addr) {
		fprintf(stderr, "%s: -s and -d are needed\n", argv[0]);
		return 2;
	}
	srand(seed);
	rocev2_init();
	fd = rocev2_socket();
	if (fd < 0) {
		perror("raw socket");
		return 1;
	}
	for (unsigned long i = 0; i < n; i++) {
		enum cls k = rand() % NCLS;

		if (send_pkt(fd, pkt, craft(k, pkt)))
			return 1;
		sent[k]++;
	}
	for (unsigned long i = 0; i < burst; i++)
		if (send_pkt(fd, pkt, craft(UNKNOWN_QPN, pkt)))
			return 1;
	printf("seed=%u", seed);
	for (int k = 0; k < NCLS; k++)
		printf(" %s=%lu", cls_names[k], sent[k]);
	printf(" burst=%lu\n", burst);
	return 0;
}
