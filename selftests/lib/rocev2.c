// SPDX-License-Identifier: GPL-2.0
/*
 * RoCEv2 packets built byte by byte (rocev2.h). The ICRC is the CRC-32 of
 * the packet from the IP header to the end of the payload, with an LRH of
 * ones in front and the fields routers may change (TOS, TTL, IP checksum,
 * UDP checksum, the BTH's FECN/BECN/reserved byte) taken as ones; it goes
 * on the wire little endian, as rdma_rxe and the NICs send it.
 */
#include <errno.h>
#include <netinet/ip.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rocev2.h"

static uint32_t crc_table[256];
static uint16_t ip_id;

void rocev2_init(void)
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
	uint8_t ph[ROCEV2_BTH_OFF + ROCEV2_BTH_LEN];
	uint32_t crc;

	memcpy(ph, pkt, sizeof(ph));
	ph[1] = 0xff;					/* TOS */
	ph[8] = 0xff;					/* TTL */
	ph[10] = ph[11] = 0xff;				/* IP checksum */
	ph[ROCEV2_IP_LEN + 6] = ph[ROCEV2_IP_LEN + 7] = 0xff;	/* UDP sum */
	ph[ROCEV2_BTH_OFF + 4] = 0xff;			/* FECN, BECN, resv */
	crc = crc_add(0xffffffffu, lrh, sizeof(lrh));
	crc = crc_add(crc, ph, sizeof(ph));
	crc = crc_add(crc, pkt + sizeof(ph), len - sizeof(ph));
	return ~crc;
}

void rocev2_put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

void rocev2_put64(uint8_t *p, uint64_t v)
{
	rocev2_put32(p, v >> 32);
	rocev2_put32(p + 4, v);
}

size_t rocev2_ip_udp(uint8_t *pkt, struct in_addr src, struct in_addr dst,
		     size_t len)
{
	size_t tot = ROCEV2_BTH_OFF + len;
	uint8_t *udp = pkt + ROCEV2_IP_LEN;

	memset(pkt, 0, ROCEV2_BTH_OFF);
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
	udp[0] = 0xc0;			/* a source port of the RoCE range */
	udp[1] = rand();
	udp[2] = ROCEV2_PORT >> 8;
	udp[3] = ROCEV2_PORT & 0xff;
	udp[4] = (ROCEV2_UDP_LEN + len) >> 8;
	udp[5] = ROCEV2_UDP_LEN + len;
	return tot;
}

void rocev2_bth(uint8_t *b, uint8_t opcode, unsigned int pad, uint32_t dqpn,
		uint32_t psn, int ackreq)
{
	memset(b, 0, ROCEV2_BTH_LEN);
	b[0] = opcode;
	b[1] = (pad & 3) << 4;
	b[2] = b[3] = 0xff;
	rocev2_put32(b + 4, dqpn & 0xffffff);
	rocev2_put32(b + 8, (psn & 0xffffff) | (ackreq ? 1u << 31 : 0));
}

void rocev2_reth(uint8_t *p, uint64_t va, uint32_t rkey, uint32_t len)
{
	rocev2_put64(p, va);
	rocev2_put32(p + 8, rkey);
	rocev2_put32(p + 12, len);
}

void rocev2_aeth(uint8_t *p, uint8_t syndrome, uint32_t msn)
{
	rocev2_put32(p, (uint32_t)syndrome << 24 | (msn & 0xffffff));
}

void rocev2_seal(uint8_t *pkt, size_t tot)
{
	uint32_t c = icrc(pkt, tot - ROCEV2_ICRC_LEN);
	uint8_t *p = pkt + tot - ROCEV2_ICRC_LEN;

	for (int i = 0; i < 4; i++, c >>= 8)	/* little endian */
		p[i] = c;
}

int rocev2_socket(void)
{
	int fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW), one = 1;

	if (fd >= 0 && setsockopt(fd, IPPROTO_IP, IP_HDRINCL, &one,
				  sizeof(one))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

int rocev2_send(int fd, const uint8_t *pkt, size_t tot)
{
	struct sockaddr_in to = { .sin_family = AF_INET };

	memcpy(&to.sin_addr, pkt + 16, 4);
	for (;;) {
		if (sendto(fd, pkt, tot, 0, (struct sockaddr *)&to,
			   sizeof(to)) == (ssize_t)tot)
			return 0;
		if (errno != ENOBUFS && errno != EAGAIN)
			return -1;
		usleep(100);	/* the qdisc is full: let it drain */
	}
}
