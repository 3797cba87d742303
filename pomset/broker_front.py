"""The embedded broker's front: noida-db answers a Fetch at once even when it has no records,
where a Kafka broker holds it until records come or the request's MaxWaitMs passes. Its
clients then fetch in a loop: an idle consumer made some 38,000 requests a second here, most
of a core between it and the broker. This front listens on the broker's port, passes every
request and response through (the broker's address in its answers changed to the front's),
and keeps an empty Fetch response back as Kafka does: it asks again every `RETRY_S` until
records come, or returns the last empty answer once the request's MaxWaitMs has passed.
Responses reach a client in the order it asked, as from a Kafka broker.

noida-db also ignores a Fetch's MaxBytes and PartitionMaxBytes: it answers with every record
from the fetch offset on, and a consumer far behind on a large partition gets a response over
its receive.message.max.bytes, which it rejects, and never progresses. The front cuts such a
response as a Kafka broker would (KIP-74): whole record batches while they fit in the
partition's and the response's limits, but always the first batch, so that a batch larger than
the limits still gets through. Responses within the limits pass as they came.

    python broker_front.py --port P --broker-port B --noida EXECUTABLE --data-dir DIR

runs noida-db with only its Kafka service on loopback port B, in this process's group,
and serves until it exits (with its exit code) or this process is stopped. Only the standard
library, so that starting it does not import pomset."""
from __future__ import annotations

import argparse
import asyncio
import collections
import socket
import struct
import subprocess
import sys
import time
from typing import Deque, Dict, List, NamedTuple, Optional, Tuple

PRODUCE, FETCH = 0, 1
NAMING_BROKERS = {3, 10, 60}   # Metadata, FindCoordinator, DescribeCluster: say where brokers are
RETRY_S = 0.005   # how often a held Fetch is asked again: the most it adds to a record's wait


def _uvarint(b: bytes, pos: int) -> Tuple[int, int]:
    value = shift = 0
    while True:
        x = b[pos]
        pos += 1
        value |= (x & 0x7F) << shift
        if not x & 0x80:
            return value, pos
        shift += 7


def _uvarint_bytes(value: int) -> bytes:
    """An unsigned varint's encoding, as flexible versions write lengths."""
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _skip_tags(b: bytes, pos: int) -> int:
    """Past a flexible version's tagged fields."""
    count, pos = _uvarint(b, pos)
    for _ in range(count):
        _, pos = _uvarint(b, pos)
        size, pos = _uvarint(b, pos)
        pos += size
    return pos


def _count(b: bytes, pos: int, flexible: bool) -> Tuple[int, int]:
    """An array's length (0 for null)."""
    if flexible:
        n, pos = _uvarint(b, pos)
        return max(n - 1, 0), pos
    return max(struct.unpack_from(">i", b, pos)[0], 0), pos + 4


def _topic(b: bytes, pos: int, version: int) -> Tuple[bytes, int]:
    """A Fetch topic's name (its id from v13), as requests and responses both name it."""
    if version >= 13:
        return b[pos:pos + 16], pos + 16
    if version >= 12:
        n, pos = _uvarint(b, pos)
        n -= 1
    else:
        n = struct.unpack_from(">h", b, pos)[0]
        pos += 2
    n = max(n, 0)
    return b[pos:pos + n], pos + n


class FetchCaps(NamedTuple):
    """A Fetch request's limits on the records of its response: MaxBytes in all,
    PartitionMaxBytes by (topic, partition), and the least of them: a response frame no longer
    than that needs no cut."""

    total: int
    partitions: Dict[Tuple[bytes, int], int]
    least: int


def _fetch_caps(frame: bytes, pos: int, version: int) -> Optional[FetchCaps]:
    """A Fetch request's limits, read from its MinBytes on (at `pos`); None before v4 or
    where the request cannot be read."""
    if version < 4:
        return None
    flexible = version >= 12
    try:
        total = struct.unpack_from(">i", frame, pos + 4)[0]
        pos += 9 + (8 if version >= 7 else 0)   # min and max bytes, isolation, session
        partitions: Dict[Tuple[bytes, int], int] = {}
        topics, pos = _count(frame, pos, flexible)
        for _ in range(topics):
            topic, pos = _topic(frame, pos, version)
            count, pos = _count(frame, pos, flexible)
            for _ in range(count):
                partition = struct.unpack_from(">i", frame, pos)[0]
                pos += 4 + 8   # partition, fetch offset
                pos += 4 if version >= 9 else 0   # current leader epoch
                pos += 4 if version >= 12 else 0   # last fetched epoch
                pos += 8 if version >= 5 else 0   # log start offset
                partitions[(topic, partition)] = struct.unpack_from(">i", frame, pos)[0]
                pos += 4
                if flexible:
                    pos = _skip_tags(frame, pos)
            if flexible:
                pos = _skip_tags(frame, pos)
    except (struct.error, IndexError):
        return None
    return FetchCaps(total, partitions, min([total, *partitions.values()]))


class Request(NamedTuple):
    """What the front needs of a request: its API key, version and correlation id, whether
    it gets a response (all but a Produce with acks=0), and a Fetch's MaxWaitMs and limits
    (else None)."""

    api_key: int
    version: int
    correlation: int
    answered: bool
    wait_ms: Optional[int]
    caps: Optional[FetchCaps]


def request(frame: bytes) -> Request:
    """A request frame (without its size) read once. Request header v2 (flexible versions)
    adds tagged fields after the client id; the versions that use it are those of the two
    requests read further here (Fetch v12+, Produce v9+)."""
    api_key, version, correlation = struct.unpack_from(">hhi", frame, 0)
    pos = 10 + max(struct.unpack_from(">h", frame, 8)[0], 0)   # past the client id
    if api_key == FETCH:
        if version >= 12:
            pos = _skip_tags(frame, pos)
        if version < 15:   # v15 moved ReplicaId into a tagged field
            pos += 4
        return Request(api_key, version, correlation, True,
                       struct.unpack_from(">i", frame, pos)[0],
                       _fetch_caps(frame, pos + 4, version))
    if api_key != PRODUCE:
        return Request(api_key, version, correlation, True, None, None)
    if version >= 9:
        pos = _skip_tags(frame, pos)
        n, pos = _uvarint(frame, pos)   # transactional id, a compact nullable string
        pos += max(n - 1, 0)
    elif version >= 3:   # transactional id, a nullable string
        pos += 2 + max(struct.unpack_from(">h", frame, pos)[0], 0)
    acks = struct.unpack_from(">h", frame, pos)[0]
    return Request(api_key, version, correlation, acks != 0, None, None)


class _Records(NamedTuple):
    """One partition of a Fetch response: its topic (name or id), partition and error code,
    and where its records' length field, records and their end are in the frame."""

    topic: bytes
    partition: int
    error: int
    at: int
    start: int
    end: int


def _fetch_response(frame: bytes, version: int) -> Tuple[int, List[_Records]]:
    """A Fetch response frame (without its size) read down to its records: its error code and
    its partitions. ValueError (or struct.error, IndexError) where it does not read to its end."""
    flexible = version >= 12
    pos = 4   # correlation id
    if flexible:
        pos = _skip_tags(frame, pos)
    pos += 4   # throttle time
    error = 0
    if version >= 7:
        error = struct.unpack_from(">h", frame, pos)[0]
        pos += 6   # error code, session id
    found: List[_Records] = []
    topics, pos = _count(frame, pos, flexible)
    for _ in range(topics):
        topic, pos = _topic(frame, pos, version)
        partitions, pos = _count(frame, pos, flexible)
        for _ in range(partitions):
            partition, partition_error = struct.unpack_from(">ih", frame, pos)
            pos += 6 + 8   # partition, error code, high watermark
            pos += 8 if version >= 4 else 0   # last stable offset
            pos += 8 if version >= 5 else 0   # log start offset
            if version >= 4:
                aborted, pos = _count(frame, pos, flexible)
                for _ in range(aborted):
                    pos += 16
                    if flexible:
                        pos = _skip_tags(frame, pos)
            pos += 4 if version >= 11 else 0   # preferred read replica
            at = pos
            if flexible:
                size, pos = _uvarint(frame, pos)
                size -= 1
            else:
                size = struct.unpack_from(">i", frame, pos)[0]
                pos += 4
            size = max(size, 0)   # null records hold none
            found.append(_Records(topic, partition, partition_error, at, pos, pos + size))
            pos += size
            if flexible:
                pos = _skip_tags(frame, pos)
        if flexible:
            pos = _skip_tags(frame, pos)
    if flexible:
        pos = _skip_tags(frame, pos)
    if pos != len(frame):
        raise ValueError(f"a Fetch response read to {pos} of its {len(frame)} bytes")
    return error, found


def empty_fetch(frame: bytes, version: int) -> bool:
    """Whether a Fetch response frame (without its size) holds no records and no error: the
    answer a Kafka broker keeps back. False for anything it cannot read."""
    try:
        error, partitions = _fetch_response(frame, version)
    except (struct.error, IndexError, ValueError):
        return False
    return not error and all(not p.error and p.start == p.end for p in partitions)


def _whole_batches(frame: bytes, start: int, end: int, budget: int, first: bool) -> int:
    """How many bytes of the records from `start` to `end` to keep: whole record batches
    (baseOffset int64, batchLength int32, then batchLength bytes) while they fit in `budget`,
    the first one whatever its size when `first` (so that the consumer progresses)."""
    if end - start <= budget:
        return end - start
    pos = start
    while pos + 12 <= end:
        length = struct.unpack_from(">i", frame, pos + 8)[0]
        if length < 0:
            raise ValueError(f"a record batch of length {length}")
        after = pos + 12 + length
        if after > end or (after - start > budget and not (first and pos == start)):
            break
        pos = after
    return pos - start


def capped(frame: bytes, version: int, caps: Optional[FetchCaps]) -> bytes:
    """A Fetch response frame cut to its request's `caps` as a Kafka broker cuts it: each
    partition's records to whole batches that fit in its PartitionMaxBytes and what is left of
    MaxBytes, but the response's first batch always. The frame itself where nothing needs
    cutting or it cannot be read."""
    if caps is None or len(frame) <= caps.least:
        return frame
    try:
        _, partitions = _fetch_response(frame, version)
        left, first, kept = caps.total, True, []
        for p in partitions:
            # a partition the request leaves to its fetch session has MaxBytes alone
            budget = min(caps.partitions.get((p.topic, p.partition), left), left)
            n = _whole_batches(frame, p.start, p.end, budget, first)
            first, left = first and not n, left - n
            kept.append(n)
    except (struct.error, IndexError, ValueError):
        return frame
    return _cut(frame, partitions, kept, version >= 12)


def _cut(frame: bytes, partitions: List[_Records], kept: List[int], flexible: bool) -> bytes:
    """The frame with each partition's records cut to the length `kept` of it, that length
    encoded anew; everything else as it was. The frame itself where all is kept."""
    pieces, pos = [], 0
    for p, n in zip(partitions, kept):
        if n < p.end - p.start:
            length = _uvarint_bytes(n + 1) if flexible else struct.pack(">i", n)
            pieces += [frame[pos:p.at], length, frame[p.start:p.start + n]]
            pos = p.end
    if not pieces:
        return frame
    pieces.append(frame[pos:])
    return b"".join(pieces)


class _Asked:
    """A request sent upstream: its frame, API key and version, for a Fetch that may be held,
    until when (monotonic seconds), and for a Fetch, the limits its response is cut to."""

    __slots__ = ("correlation", "frame", "api_key", "version", "until", "caps")

    def __init__(self, correlation: int, frame: bytes, api_key: int, version: int,
                 until: Optional[float], caps: Optional[FetchCaps]) -> None:
        self.correlation, self.frame, self.api_key = correlation, frame, api_key
        self.version, self.until, self.caps = version, until, caps


class _Connection:
    """One client's connection and its own to the broker. `sent`: the requests upstream, in
    the order sent (the broker answers in that order); `order`: the correlation ids the
    client waits for, in the order it asked; `answered`: responses not yet its turn. The
    broker's address in its answers (`where`: its host and port as they are encoded there)
    becomes the front's, so that clients keep coming here."""

    def __init__(self, client: asyncio.StreamWriter, upstream: asyncio.StreamWriter,
                 where: Tuple[bytes, bytes]) -> None:
        self.client, self.upstream, self.where = client, upstream, where
        self.sent: Deque[_Asked] = collections.deque()
        self.order: Deque[int] = collections.deque()
        self.answered: Dict[int, bytes] = {}

    async def requests(self, reader: asyncio.StreamReader) -> None:
        while True:
            frame = await _frame(reader)
            if frame is None:
                return
            r = request(frame)
            if r.answered:
                until = time.monotonic() + r.wait_ms / 1000 if r.wait_ms else None
                self.order.append(r.correlation)
                self.sent.append(_Asked(r.correlation, frame, r.api_key, r.version, until,
                                        r.caps))
            _write(self.upstream, frame)
            await self.upstream.drain()

    async def responses(self, reader: asyncio.StreamReader) -> None:
        loop = asyncio.get_running_loop()
        while True:
            frame = await _frame(reader)
            if frame is None:
                return
            asked = self.sent.popleft()
            if (asked.until is not None and time.monotonic() + RETRY_S < asked.until
                    and empty_fetch(frame, asked.version)):
                loop.call_later(RETRY_S, self._ask_again, asked)
                continue
            if asked.api_key in NAMING_BROKERS:
                frame = frame.replace(*self.where)
            frame = capped(frame, asked.version, asked.caps)
            self.answered[asked.correlation] = frame
            while self.order and self.order[0] in self.answered:
                _write(self.client, self.answered.pop(self.order.popleft()))
            await self.client.drain()

    def _ask_again(self, asked: _Asked) -> None:
        if not self.upstream.is_closing():
            self.sent.append(asked)
            _write(self.upstream, asked.frame)


async def _frame(reader: asyncio.StreamReader) -> Optional[bytes]:
    """The next size-prefixed frame, without its size; None at the end of the stream."""
    try:
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        return await reader.readexactly(size)
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


def _write(writer: asyncio.StreamWriter, frame: bytes) -> None:
    if not writer.is_closing():
        writer.write(struct.pack(">i", len(frame)) + frame)


def _address(port: int) -> bytes:
    """How a response names a broker at 127.0.0.1:`port`: the host's last bytes (the string's
    length before them is encoded per version), then the port."""
    return b"127.0.0.1" + struct.pack(">i", port)


async def _serve(port: int, upstream_port: int, client_r: asyncio.StreamReader,
                 client_w: asyncio.StreamWriter) -> None:
    try:
        up_r, up_w = await asyncio.open_connection("127.0.0.1", upstream_port)
    except OSError:
        client_w.close()
        return
    for w in (client_w, up_w):
        w.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn = _Connection(client_w, up_w, (_address(upstream_port), _address(port)))
    tasks = [asyncio.ensure_future(conn.requests(client_r)),
             asyncio.ensure_future(conn.responses(up_r))]
    done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for t in tasks:
        t.cancel()
    for t in done:   # a side that went away ends the connection: its error says no more
        if not t.cancelled():
            t.exception()
    for w in (client_w, up_w):
        w.close()


async def serve(port: int, upstream_port: int, broker: subprocess.Popen) -> int:
    """Serve on `port` from when the broker takes connections until it exits; its exit
    code. (Listening before would accept clients only to close them.)"""
    while broker.poll() is None:
        try:
            _, w = await asyncio.open_connection("127.0.0.1", upstream_port)
            w.close()
            break
        except OSError:
            await asyncio.sleep(0.05)
    server = await asyncio.start_server(
        lambda r, w: _serve(port, upstream_port, r, w), "127.0.0.1", port, reuse_address=True)
    async with server:
        while broker.poll() is None:
            await asyncio.sleep(0.2)
    return broker.returncode


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--broker-port", type=int, required=True)
    parser.add_argument("--noida", required=True)
    parser.add_argument("--data-dir", required=True)
    args = parser.parse_args(argv)
    broker = subprocess.Popen([args.noida, "start", "--data-dir", args.data_dir, "--only", "kafka",
                               "--kafka-port", str(args.broker_port)], stdin=subprocess.DEVNULL)
    try:
        return asyncio.run(serve(args.port, args.broker_port, broker))
    finally:
        if broker.poll() is None:
            broker.terminate()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
