/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RoCEv2 packets built byte by byte, for the tests and tools that play a
 * hostile peer (tools/wire_fuzz.c, selftests/wire_rc_fuzz.c): the IPv4
 * and UDP headers, BTH, RETH, DETH, AETH and the ICRC (IBTA Annex A17),
 * and a raw IPv4 socket (IP_HDRINCL: every header byte is the caller's,
 * the source address too) to send them.
 */
#ifndef SOFTHCA_SELFTEST_ROCEV2_H
#define SOFTHCA_SELFTEST_ROCEV2_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#define ROCEV2_PORT		4791
#define ROCEV2_IP_LEN		20
#define ROCEV2_UDP_LEN		8
#define ROCEV2_BTH_LEN		12
#define ROCEV2_RETH_LEN		16
#define ROCEV2_DETH_LEN		8
#define ROCEV2_AETH_LEN		4
#define ROCEV2_ICRC_LEN		4
/* Where the BTH starts in a packet of ours. */
#define ROCEV2_BTH_OFF		(ROCEV2_IP_LEN + ROCEV2_UDP_LEN)
#define ROCEV2_PKT_MAX		1500

/* Build the CRC table: once, before anything else here. */
void rocev2_init(void);
void rocev2_put32(uint8_t *p, uint32_t v);
void rocev2_put64(uint8_t *p, uint64_t v);
/*
 * IPv4 (DF, TTL 64) and UDP headers from @src to @dst for @len bytes of
 * UDP payload (BTH to ICRC) at @pkt; returns the packet's total length.
 */
size_t rocev2_ip_udp(uint8_t *pkt, struct in_addr src, struct in_addr dst,
		     size_t len);
/* A BTH at @b: P_Key 0xffff, pad count @pad, AckReq if @ackreq. */
void rocev2_bth(uint8_t *b, uint8_t opcode, unsigned int pad, uint32_t dqpn,
		uint32_t psn, int ackreq);
void rocev2_reth(uint8_t *p, uint64_t va, uint32_t rkey, uint32_t len);
void rocev2_aeth(uint8_t *p, uint8_t syndrome, uint32_t msn);
/* The ICRC of the @tot-byte packet into its last 4 bytes. */
void rocev2_seal(uint8_t *pkt, size_t tot);
/* A raw IPv4 socket with IP_HDRINCL, or -1 (errno). */
int rocev2_socket(void);
/* Send a packet to the destination of its IP header; 0 or -1 (errno). */
int rocev2_send(int fd, const uint8_t *pkt, size_t tot);

#endif
