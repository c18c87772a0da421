#!/usr/bin/env python3
"""Writes TensorBoard event files for benches/memory.sh: one FILE of RECORDS tiny scalar
events (one tag each, steps 1..RECORDS), the TFRecord framing with TensorFlow's masked
CRC-32C (crcmod's C extension when present, else a table in Python).

    python3 benches/tb_events.py FILE RECORDS [TAGS]
"""
import struct
import sys

try:
    import crcmod.predefined

    crc32c = crcmod.predefined.mkCrcFun("crc-32c")
except ImportError:
    TABLE = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        TABLE.append(c)

    def crc32c(data):
        c = 0xFFFFFFFF
        for b in data:
            c = TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
        return c ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def field(number, wire, payload):
    return varint(number << 3 | wire) + payload


def length_delimited(number, data):
    return field(number, 2, varint(len(data)) + data)


def event(step, tag, value):
    summary_value = length_delimited(1, tag) + field(2, 5, struct.pack("<f", value))
    summary = length_delimited(1, summary_value)
    return field(1, 1, struct.pack("<d", 1.7e9)) + field(2, 0, varint(step)) + length_delimited(5, summary)


def record(data):
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked(length)) + data + struct.pack("<I", masked(data))


def main(path, records, tags=1):
    names = [b"lm loss", b"grad-norm", b"learning-rate", b"mem-allocated-bytes"][:tags]
    with open(path, "wb") as out:
        buf = []
        for step in range(1, records + 1):
            buf.append(record(event(step, names[step % len(names)], step * 0.5)))
            if len(buf) == 10000:
                out.write(b"".join(buf))
                buf = []
        out.write(b"".join(buf))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), *(int(a) for a in sys.argv[3:]))
