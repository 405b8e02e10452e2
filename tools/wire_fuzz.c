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
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ROCE_PORT	4791
#define IP_LEN		20
#define UDP_LEN		8
#define BTH_LEN		12
#define DETH_LEN	8
#define ICRC_LEN	4
#define GSI_QKEY	0x80010000u
#define UD_SEND_ONLY	0x64
#define RD_SEND_ONLY	0x44	/* RD: a transport softhca has no rows for */
#define NO_SUCH_QPN	0xfedcbau
#define PKT_MAX		1500

enum cls { RANDOM, TRUNCATED, BAD_ICRC, BAD_OPCODE, BAD_TVER, UNKNOWN_QPN,
	   BAD_QKEY, OVERSIZE, NCLS };

static const char *const cls_names[NCLS] = {
	"random", "truncated", "bad_icrc", "bad_opcode", "bad_tver",
	"unknown_qpn", "bad_qkey", "oversize",
};

static uint32_t crc_table[256];

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t crc_add(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

/* The ICRC of @pkt (IP header first) of @len bytes, the ICRC excluded. */
static uint32_t icrc(const uint8_t *pkt, size_t len)
{
	static const uint8_t lrh[8] = { 0xff, 0xff, 0xff, 0xff,
					0xff, 0xff, 0xff, 0xff };
	uint8_t ph[IP_LEN + UDP_LEN + BTH_LEN];
	uint32_t crc;

	memcpy(ph, pkt, sizeof(ph));
	ph[1] = 0xff;			/* TOS */
	ph[8] = 0xff;			/* TTL */
	ph[10] = ph[11] = 0xff;		/* IP checksum */
	ph[IP_LEN + 6] = ph[IP_LEN + 7] = 0xff;	/* UDP checksum */
	ph[IP_LEN + UDP_LEN + 4] = 0xff;	/* BTH FECN, BECN, reserved */
	crc = crc_add(0xffffffffu, lrh, sizeof(lrh));
	crc = crc_add(crc, ph, sizeof(ph));
	crc = crc_add(crc, pkt + sizeof(ph), len - sizeof(ph));
	return ~crc;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static struct in_addr src, dst;
static uint16_t ip_id = 1;

/* IP and UDP headers for @len bytes of UDP payload; returns the total. */
static size_t put_ip_udp(uint8_t *pkt, size_t len)
{
	size_t tot = IP_LEN + UDP_LEN + len;

	memset(pkt, 0, IP_LEN + UDP_LEN);
	pkt[0] = 0x45;
	pkt[2] = tot >> 8;
	pkt[3] = tot;
	/* Nonzero: a raw socket would pick one itself for 0 (raw(7)). */
	if (!++ip_id)
		ip_id = 1;
	pkt[4] = ip_id >> 8;
	pkt[5] = ip_id;
	pkt[6] = 0x40;			/* DF */
	pkt[8] = 64;
	pkt[9] = IPPROTO_UDP;
	memcpy(pkt + 12, &src, 4);
	memcpy(pkt + 16, &dst, 4);
	pkt[IP_LEN] = 0xc0;
	pkt[IP_LEN + 1] = rand();
	pkt[IP_LEN + 2] = ROCE_PORT >> 8;
	pkt[IP_LEN + 3] = ROCE_PORT & 0xff;
	pkt[IP_LEN + 4] = (UDP_LEN + len) >> 8;
	pkt[IP_LEN + 5] = UDP_LEN + len;
	return tot;
}

/* A well-formed UD SEND_ONLY of @paylen bytes to @qpn with @qkey. */
static size_t good_ud(uint8_t *pkt, uint32_t qpn, uint32_t qkey,
		      size_t paylen)
{
	size_t pad = -paylen & 3, len = BTH_LEN + DETH_LEN + paylen + pad +
					ICRC_LEN;
	size_t tot = put_ip_udp(pkt, len);
	uint8_t *b = pkt + IP_LEN + UDP_LEN;
	uint32_t c;

	memset(b, 0, len);
	b[0] = UD_SEND_ONLY;
	b[1] = pad << 4;
	b[2] = b[3] = 0xff;		/* P_Key */
	put32(b + 4, qpn & 0xffffff);
	put32(b + 8, rand() & 0xffffff);
	put32(b + 12, qkey);
	put32(b + 16, 0x42);		/* source QPN */
	for (size_t i = 0; i < paylen; i++)
		b[20 + i] = rand();
	c = icrc(pkt, tot - ICRC_LEN);
	memcpy(pkt + tot - ICRC_LEN, &c, 4);	/* little endian, as rxe */
	return tot;
}

/* The ICRC again after the caller changed a header byte. */
static void reseal(uint8_t *pkt, size_t tot)
{
	uint32_t c = icrc(pkt, tot - ICRC_LEN);

	memcpy(pkt + tot - ICRC_LEN, &c, 4);
}

static size_t craft(enum cls k, uint8_t *pkt)
{
	size_t tot, len;

	switch (k) {
	case RANDOM:
		len = rand() % 1200;
		tot = put_ip_udp(pkt, len);
		for (size_t i = IP_LEN + UDP_LEN; i < tot; i++)
			pkt[i] = rand();
		return tot;
	case TRUNCATED:
		tot = good_ud(pkt, 1, GSI_QKEY, 256);
		len = rand() % (tot - IP_LEN - UDP_LEN - 1);
		/* The UDP length says what is there: the RoCE part is short. */
		return put_ip_udp(pkt, len);
	case BAD_ICRC:
		tot = good_ud(pkt, 1, GSI_QKEY, 64);
		pkt[tot - 1 - rand() % 4] ^= 1 << (rand() % 8);
		return tot;
	case BAD_OPCODE:
		tot = good_ud(pkt, 1, GSI_QKEY, 64);
		pkt[IP_LEN + UDP_LEN] = RD_SEND_ONLY;
		reseal(pkt, tot);
		return tot;
	case BAD_TVER:
		tot = good_ud(pkt, 1, GSI_QKEY, 64);
		pkt[IP_LEN + UDP_LEN + 1] |= 1 + rand() % 15;
		reseal(pkt, tot);
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
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr = dst };

	for (;;) {
		if (sendto(fd, pkt, tot, 0, (struct sockaddr *)&to,
			   sizeof(to)) == (ssize_t)tot)
			return 0;
		if (errno != ENOBUFS && errno != EAGAIN) {
			perror("sendto");
			return -1;
		}
		usleep(100);
	}
}

int main(int argc, char **argv)
{
	unsigned long n = 2000, burst = 0, sent[NCLS] = { 0 };
	unsigned int seed = time(NULL);
	uint8_t pkt[PKT_MAX];
	int opt, fd, one = 1;

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
	crc_init();
	fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (fd < 0 || setsockopt(fd, IPPROTO_IP, IP_HDRINCL, &one,
				 sizeof(one))) {
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
