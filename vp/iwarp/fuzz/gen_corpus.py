#!/usr/bin/env python3
"""Seed corpus for the vp/iwarp fuzz target (iw_fuzz.c).

Each seed is one byte of mode (see iw_fuzz.h) followed by what the peer's
TCP stream carries.  The frame formats are those of RFC 5044 (MPA),
RFC 6581 (control word), RFC 5041 (DDP), RFC 5040 (RDMAP) and RFC 7306 as
/work/shared/reference/wire.md lays them out; the golden frames quoted
there are included verbatim.  Usage: gen_corpus.py OUTDIR
"""
import os
import struct
import sys

# iw_fuzz.h
RW_STAG, RW_IOVA, RW_LEN = 0x200, 0x10000, 65536
RO_STAG, RO_IOVA = 0x300, 0x1000
CRC, READ, RECVS, NO_FENCE, READ_RTR = 0x08, 0x10, 0x20, 0x40, 0x80

_T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    _T.append(c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _T[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


def fpdu(ulpdu, crc=True, bad=False):
    body = struct.pack('!H', len(ulpdu)) + ulpdu
    body += b'\0' * (-len(body) % 4)
    c = struct.pack('<I', crc32c(body)) if crc else b'\0' * 4
    if bad:
        c = bytes([c[0] ^ 0xFF]) + c[1:]
    return body + c


def tagged(op, stag, to, last=True):
    return bytes([0x80 | (0x40 if last else 0) | 1, 0x40 | op]) + struct.pack('!IQ', stag, to)


def untagged(op, qn, msn, mo=0, inv=0, last=True):
    return bytes([(0x40 if last else 0) | 1, 0x40 | op]) + struct.pack('!IIII', inv, qn, msn, mo)


def send(payload, msn=1, mo=0, last=True, op=3):
    return untagged(op, 0, msn, mo, 0, last) + payload


def read_req(msn, sink_stag, sink_to, size, src_stag, src_to):
    return untagged(1, 1, msn) + struct.pack('!IQIIQ', sink_stag, sink_to, size, src_stag, src_to)


def atomic_req(msn, op, req_id, stag, to, add_swap, compare=0, as_mask=0, cmp_mask=0):
    # RFC 7306 Atomic Request: QN 1, sharing MSNs with Read Requests
    return untagged(0xa, 1, msn) + struct.pack('!IIIQQQQQ', op, req_id, stag, to, add_swap,
                                               as_mask, compare, cmp_mask)


def atomic_resp(msn, req_id, orig):
    return untagged(0xb, 3, msn) + struct.pack('!IQ', req_id, orig)


def terminate(layer, etype, code, msn=1, extra=b'', hdrct=0):
    return untagged(7, 2, msn) + struct.pack('!BBBB', (layer << 4) | etype, code, hdrct, 0) + extra


def mpa(key, flags, rev, pdata=b''):
    return key + struct.pack('!BBH', flags, rev, len(pdata)) + pdata


def ctrl(ird, ord_, a=False, b=False, c=False, d=False):
    return struct.pack('!HH', ird | (0x8000 if a else 0) | (0x4000 if b else 0),
                       ord_ | (0x8000 if c else 0) | (0x4000 if d else 0))


REQ, REP = b'MPA ID Req Frame', b'MPA ID Rep Frame'


def seeds():
    s = {}
    for crc in (False, True):
        m = CRC if crc else 0
        n = 'crc' if crc else 'nocrc'
        f = lambda u, **k: fpdu(u, crc, **k)
        s['rts-send-' + n] = bytes([RECVS | m]) + f(send(b'Hello, iWARP!'))
        s['rts-send-2seg-' + n] = bytes([RECVS | m]) + f(send(b'abcde', 1, 0, False)) + \
            f(send(b'fghij' * 3, 1, 5, True))
        s['rts-send-sge3-' + n] = bytes([RECVS | m]) + f(send(b'x' * 64)) + f(send(b'y' * 40, 2))
        s['rts-send-toolong-' + n] = bytes([RECVS | m]) + f(send(b'z' * 65))
        s['rts-write-' + n] = bytes([m]) + f(tagged(0, RW_STAG, RW_IOVA + 100) + b'w' * 64)
        s['rts-write-2seg-' + n] = bytes([m]) + f(tagged(0, RW_STAG, RW_IOVA, False) + b'a' * 1000) + \
            f(tagged(0, RW_STAG, RW_IOVA + 1000) + b'b' * 1000)
        s['rts-write-edge-' + n] = bytes([m]) + f(tagged(0, RW_STAG, RW_IOVA + RW_LEN - 16) + b'e' * 16)
        s['rts-write-over-' + n] = bytes([m]) + f(tagged(0, RW_STAG, RW_IOVA + RW_LEN - 10) + b'o' * 20)
        s['rts-write-ro-' + n] = bytes([m]) + f(tagged(0, RO_STAG, RO_IOVA) + b'r' * 8)
        s['rts-write-wrap-' + n] = bytes([m]) + f(tagged(0, RW_STAG, 2**64 - 4) + b'q' * 8)
        s['rts-readreq-' + n] = bytes([m]) + f(read_req(1, 0x4242, 0x100, 100, RW_STAG, RW_IOVA + 8))
        s['rts-readreq-ro-' + n] = bytes([m]) + f(read_req(1, 0x4242, 0, 8192, RO_STAG, RO_IOVA))
        s['rts-readreq-ird-' + n] = bytes([m]) + b''.join(
            f(read_req(i, 0x4242, 0, RW_LEN, RW_STAG, RW_IOVA)) for i in range(1, 5))
        s['rts-readresp-' + n] = bytes([READ | m]) + \
            f(tagged(2, RW_STAG, RW_IOVA + RW_LEN - 300, False) + b'R' * 200) + \
            f(tagged(2, RW_STAG, RW_IOVA + RW_LEN - 100) + b'S' * 100)
        s['rts-readresp-over-' + n] = bytes([READ | m]) + \
            f(tagged(2, RW_STAG, RW_IOVA + RW_LEN - 300) + b'R' * 400)
        s['rts-term-' + n] = bytes([READ | RECVS | m]) + \
            f(terminate(1, 2, 2, extra=struct.pack('!H', 18) + untagged(3, 0, 1), hdrct=0xc0))
        s['rts-opcode8-' + n] = bytes([m]) + f(untagged(8, 0, 1) + b'12345678')
        s['rts-mixed-' + n] = bytes([RECVS | READ | m]) + f(send(b'one')) + \
            f(tagged(0, RW_STAG, RW_IOVA) + b'W' * 33) + \
            f(read_req(1, 0x4242, 0, 16, RW_STAG, RW_IOVA)) + \
            f(tagged(2, RW_STAG, RW_IOVA + RW_LEN - 300) + b'Z' * 300) + f(send(b'two', 2))
        # RFC 7306 (mode 5: negotiated); the Fetch and Add posted with READ is request 1
        ones = 2**64 - 1
        s['rfc7306-faa-' + n] = bytes([5 | m]) + f(atomic_req(1, 0, 7, RW_STAG, RW_IOVA + 8, 5))
        s['rfc7306-cas-' + n] = bytes([5 | m]) + \
            f(atomic_req(1, 2, 8, RW_STAG, RW_IOVA + 16, 9, 0x5a5a5a5a5a5a5a5a, ones, ones))
        s['rfc7306-masked-' + n] = bytes([5 | m]) + \
            f(atomic_req(1, 0, 9, RW_STAG, RW_IOVA + 24, 0x0101, 0, 0x0100))
        s['rfc7306-misaligned-' + n] = bytes([5 | m]) + f(atomic_req(1, 0, 1, RW_STAG, RW_IOVA + 4, 1))
        s['rfc7306-ro-' + n] = bytes([5 | m]) + f(atomic_req(1, 0, 1, RO_STAG, RO_IOVA, 1))
        s['rfc7306-over-' + n] = bytes([5 | m]) + f(atomic_req(1, 0, 1, RW_STAG, RW_IOVA + RW_LEN - 4, 1))
        s['rfc7306-ird-' + n] = bytes([5 | m]) + b''.join(
            f(atomic_req(i, 0, i, RW_STAG, RW_IOVA, 1)) for i in range(1, 5))
        s['rfc7306-badop-' + n] = bytes([5 | m]) + f(atomic_req(1, 7, 1, RW_STAG, RW_IOVA, 1))
        s['rfc7306-resp-' + n] = bytes([5 | READ | m]) + f(atomic_resp(1, 1, 0x1234))
        s['rfc7306-resp-wrongid-' + n] = bytes([5 | READ | m]) + f(atomic_resp(1, 2, 0x1234))
        s['rfc7306-resp-unasked-' + n] = bytes([5 | m]) + f(atomic_resp(1, 1, 0))
        s['rfc7306-mixed-' + n] = bytes([5 | READ | RECVS | m]) + f(send(b'one')) + \
            f(atomic_req(1, 0, 3, RW_STAG, RW_IOVA, 2)) + f(read_req(2, 0x4242, 0, 16, RW_STAG, RW_IOVA)) + \
            f(atomic_resp(1, 1, 42)) + f(send(b'two', 2))
        # RFC 7306 Immediate Data: QN 0 with the Sends' MSNs, exactly 8 bytes, one receive
        s['rfc7306-imm-' + n] = bytes([5 | RECVS | m]) + f(untagged(8, 0, 1) + b'IMMEDIAT') + \
            f(untagged(9, 0, 2) + b'with SE!') + f(send(b'after', 3))
        s['rfc7306-imm-short-' + n] = bytes([5 | RECVS | m]) + f(untagged(8, 0, 1) + b'1234')
        s['rfc7306-imm-long-' + n] = bytes([5 | RECVS | m]) + f(untagged(8, 0, 1) + b'123456789')
        s['rfc7306-imm-norecv-' + n] = bytes([5 | m]) + f(untagged(8, 0, 1) + b'12345678')
        s['rfc7306-imm-in-send-' + n] = bytes([5 | RECVS | m]) + \
            f(send(b'first half', last=False)) + f(untagged(8, 0, 1, 10) + b'12345678')
        s['rfc7306-imm-badqn-' + n] = bytes([5 | RECVS | m]) + f(untagged(8, 1, 1) + b'12345678')
        s['rfc7306-write-imm-' + n] = bytes([5 | RECVS | m]) + \
            f(tagged(0, RW_STAG, RW_IOVA) + b'W' * 40) + f(untagged(8, 0, 1) + b'\0\0\0\0\0\0\0\x2a')
        s['rts-atomic-not-negotiated-' + n] = bytes([m]) + f(atomic_req(1, 0, 1, RW_STAG, RW_IOVA, 1))
        s['rtr-write-' + n] = bytes([1 | RECVS | m]) + f(tagged(0, 1, 0)) + f(send(b'after rtr'))
        s['rtr-read-' + n] = bytes([1 | READ_RTR | RECVS | m]) + f(read_req(1, 1, 0, 0, 1, 0)) + \
            f(send(b'after rtr'))
        s['rtr-wrong-' + n] = bytes([1 | m]) + f(send(b'no rtr'))
        flags = (0x40 if crc else 0) | 0x10
        rep = mpa(REP, flags, 2, ctrl(4, 4, a=True, c=True) + b'accepted')
        s['active-rev2-' + n] = bytes([2 | RECVS | m]) + rep + f(send(b'hi'))
        rep7306 = mpa(REP, flags | 0x04, 2, ctrl(4, 4, a=True, c=True))
        s['active-rfc7306-' + n] = bytes([2 | m]) + rep7306 + f(atomic_req(1, 0, 1, RW_STAG, RW_IOVA, 3))
        s['active-rev1-' + n] = bytes([2 | RECVS | m]) + mpa(REP, flags & 0x40, 1, b'ok') + \
            f(send(b'hi'))
        s['active-reject-' + n] = bytes([2 | m]) + mpa(REP, 0x20 | flags, 2, b'no')
        s['active-markers-' + n] = bytes([2 | m]) + mpa(REP, 0x80 | flags, 2, ctrl(4, 4, a=True, c=True))
        s['active-nortr-' + n] = bytes([2 | m]) + mpa(REP, flags, 2, ctrl(4, 4, a=True))
        req = mpa(REQ, flags, 2, ctrl(16, 16, a=True, c=True, d=True) + b'ulp')
        s['passive-rev2-' + n] = bytes([3 | RECVS | m]) + req + f(tagged(0, 1, 0)) + \
            f(send(b'data')) + f(read_req(1, 0x4242, 0, 32, RW_STAG, RW_IOVA))
        s['passive-rev1-' + n] = bytes([3 | RECVS | m]) + mpa(REQ, flags & 0x40, 1, b'ULP private data') + \
            f(send(b'first'))
        s['listen-rev2-' + n] = bytes([4 | RECVS | m]) + req + f(tagged(0, 1, 0)) + f(send(b'data'))
        s['listen-rev2-readrtr-' + n] = bytes([4 | RECVS | m]) + \
            mpa(REQ, flags, 2, ctrl(16, 16, a=True, d=True)) + f(read_req(1, 1, 0, 0, 1, 0)) + \
            f(send(b'data'))
    s['rts-badcrc'] = bytes([RECVS | CRC]) + fpdu(send(b'Hello, iWARP!'), True, bad=True)
    s['listen-markers'] = bytes([4]) + mpa(REQ, 0x80, 1)
    s['listen-badkey'] = bytes([4]) + mpa(b'MPA ID Rex Frame', 0, 1)
    s['listen-pdlen-600'] = bytes([4]) + mpa(REQ, 0, 1)[:18] + struct.pack('!H', 600)
    s['listen-pdlen-short'] = bytes([4]) + mpa(REQ, 0, 1)[:18] + struct.pack('!H', 100) + b'x' * 20
    s['listen-rev2-noctrl'] = bytes([4]) + mpa(REQ, 0x10, 2, b'ab')
    # wire.md golden frames, verbatim
    s['golden-req-rev1'] = bytes([4 | CRC]) + bytes.fromhex(
        '4d50412049442052657120467261 6d65 40010010 554c50207072697661746520 64617461'.replace(' ', ''))
    s['golden-req-rev2'] = bytes([4 | CRC]) + bytes.fromhex(
        '4d504120494420526571204672616d6550020007 8010c010 756c70'.replace(' ', '')) + \
        bytes.fromhex('000ec14000000001000000000000 0000 ebd34c5f'.replace(' ', ''))
    s['golden-send'] = bytes([RECVS | CRC]) + bytes.fromhex(
        '001f41430000000000000000000000010000000048656c6c6f2c20695741525021000000 1343081e'.replace(' ', ''))
    return s


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in seeds().items():
        with open(os.path.join(out, name), 'wb') as fh:
            fh.write(data)


if __name__ == '__main__':
    main()
