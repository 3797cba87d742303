"""The embedded broker's front: noida-db answers a Fetch at once even when it has no records,
where a Kafka broker holds it until records come or the request's MaxWaitMs passes. Its
clients then fetch in a loop, an idle consumer keeping most of a core busy between it and
the broker. This front listens on the broker's port, passes every
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

And noida-db lists every aborted transaction of a partition in a read_committed Fetch's answer,
also those that ended (their abort marker) before the fetch offset, where a Kafka broker lists
only those that end at or after it. A client drops a producer's records from an aborted
transaction's first offset until it reads that transaction's marker: one that fetches from
after the marker (any consumer that resumes mid-log, or reads on after a cut answer) never
reads it, and drops every later record of that producer, committed ones too, in silence. The
front looks up where such a transaction ended (one read of the log from its first offset,
remembered: `AbortEnds`) and leaves out those that ended before the fetch offset.

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


Partition = Tuple[bytes, int]   # a topic (its name, or its id from v13) and a partition


class FetchAsk(NamedTuple):
    """What a Fetch request asks of its response's records: MaxBytes in all (`total`),
    PartitionMaxBytes and the fetch offset by partition, the least of the limits (a response
    frame no longer than that needs no cut), and whether it reads committed records only."""

    total: int
    partitions: Dict[Partition, int]
    least: int
    offsets: Dict[Partition, int]
    read_committed: bool


def _fetch_ask(frame: bytes, pos: int, version: int) -> Optional[FetchAsk]:
    """What a Fetch request asks, read from its MinBytes on (at `pos`); None before v4 or
    where the request cannot be read."""
    if version < 4:
        return None
    flexible = version >= 12
    try:
        total, isolation = struct.unpack_from(">ib", frame, pos + 4)
        pos += 9 + (8 if version >= 7 else 0)   # min and max bytes, isolation, session
        partitions: Dict[Partition, int] = {}
        offsets: Dict[Partition, int] = {}
        topics, pos = _count(frame, pos, flexible)
        for _ in range(topics):
            topic, pos = _topic(frame, pos, version)
            count, pos = _count(frame, pos, flexible)
            for _ in range(count):
                partition = struct.unpack_from(">i", frame, pos)[0]
                pos += 4 + (4 if version >= 9 else 0)   # partition, current leader epoch
                offsets[(topic, partition)] = struct.unpack_from(">q", frame, pos)[0]
                pos += 8 + (4 if version >= 12 else 0)   # fetch offset, last fetched epoch
                pos += 8 if version >= 5 else 0   # log start offset
                partitions[(topic, partition)] = struct.unpack_from(">i", frame, pos)[0]
                pos += 4
                if flexible:
                    pos = _skip_tags(frame, pos)
            if flexible:
                pos = _skip_tags(frame, pos)
    except (struct.error, IndexError):
        return None
    return FetchAsk(total, partitions, min([total, *partitions.values()]), offsets,
                    isolation == 1)


class Request(NamedTuple):
    """What the front needs of a request: its API key, version and correlation id, whether
    it gets a response (all but a Produce with acks=0), and a Fetch's MaxWaitMs and what it
    asks of its records (else None)."""

    api_key: int
    version: int
    correlation: int
    answered: bool
    wait_ms: Optional[int]
    fetch: Optional[FetchAsk]


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
                       _fetch_ask(frame, pos + 4, version))
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


class _Aborted(NamedTuple):
    """One aborted transaction a Fetch response lists: its producer id and first offset, and
    where the entry is in the frame."""

    producer: int
    first: int
    start: int
    end: int


class _Records(NamedTuple):
    """One partition of a Fetch response: its topic (name or id), partition and error code,
    its aborted transactions and where their array is in the frame, and where its records'
    length field, records and their end are."""

    topic: bytes
    partition: int
    error: int
    aborted: Tuple[_Aborted, ...]
    aborted_at: int
    aborted_end: int
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
            aborted: List[_Aborted] = []
            aborted_at = pos
            if version >= 4:
                count, pos = _count(frame, pos, flexible)
                for _ in range(count):
                    producer, first = struct.unpack_from(">qq", frame, pos)
                    entry = pos
                    pos += 16
                    if flexible:
                        pos = _skip_tags(frame, pos)
                    aborted.append(_Aborted(producer, first, entry, pos))
            aborted_end = pos
            pos += 4 if version >= 11 else 0   # preferred read replica
            at = pos
            if flexible:
                size, pos = _uvarint(frame, pos)
                size -= 1
            else:
                size = struct.unpack_from(">i", frame, pos)[0]
                pos += 4
            size = max(size, 0)   # null records hold none
            found.append(_Records(topic, partition, partition_error, tuple(aborted), aborted_at,
                                  aborted_end, at, pos, pos + size))
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


def _readable(frame: bytes, version: int) -> Optional[List[_Records]]:
    """A Fetch response's partitions, or None where the frame cannot be read."""
    try:
        return _fetch_response(frame, version)[1]
    except (struct.error, IndexError, ValueError):
        return None


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


AbortKey = Tuple[bytes, int, int, int]   # topic, partition, producer id, first offset


def stale_aborts(partitions: List[_Records], fetch: Optional[FetchAsk]) -> List[AbortKey]:
    """The aborted transactions a read_committed response lists that began before their
    partition's fetch offset: whether to list them depends on where they ended."""
    if fetch is None or not fetch.read_committed:
        return []
    stale = []
    for p in partitions:
        offset = fetch.offsets.get((p.topic, p.partition))
        if offset is not None:
            stale += [(p.topic, p.partition, a.producer, a.first)
                      for a in p.aborted if a.first < offset]
    return stale


def answer(frame: bytes, version: int, fetch: Optional[FetchAsk],
           ends: Optional[Dict[AbortKey, int]] = None,
           partitions: Optional[List[_Records]] = None) -> bytes:
    """A Fetch response frame as a Kafka broker gives it for its request: the aborted
    transactions that `ends` (their markers' offsets) says ended before their partition's fetch
    offset left out, and each partition's records cut to whole batches that fit in its
    PartitionMaxBytes and what is left of MaxBytes, but the response's first batch always. The
    frame itself where nothing changes or it cannot be read (`partitions`: it read already)."""
    if fetch is None or (len(frame) <= fetch.least and not ends):
        return frame
    partitions = partitions if partitions is not None else _readable(frame, version)
    if partitions is None:
        return frame
    flexible, edits = version >= 12, []
    for p in partitions:
        offset = fetch.offsets.get((p.topic, p.partition))
        kept = [a for a in p.aborted if offset is None or a.first >= offset
                or ends.get((p.topic, p.partition, a.producer, a.first), offset) >= offset]
        if ends and len(kept) < len(p.aborted):
            count = _uvarint_bytes(len(kept) + 1) if flexible else struct.pack(">i", len(kept))
            edits.append((p.aborted_at, p.aborted_end,
                          count + b"".join(frame[a.start:a.end] for a in kept)))
    if len(frame) > fetch.least:
        left, first = fetch.total, True
        for p in partitions:
            # a partition the request leaves to its fetch session has MaxBytes alone
            budget = min(fetch.partitions.get((p.topic, p.partition), left), left)
            try:
                n = _whole_batches(frame, p.start, p.end, budget, first)
            except (struct.error, ValueError):
                return frame
            first, left = first and not n, left - n
            if n < p.end - p.start:
                length = _uvarint_bytes(n + 1) if flexible else struct.pack(">i", n)
                edits.append((p.at, p.end, length + frame[p.start:p.start + n]))
    return _edited(frame, edits)


def _edited(frame: bytes, edits: List[Tuple[int, int, bytes]]) -> bytes:
    """The frame with each (start, end) span, in order, replaced by its bytes; the frame itself
    without edits."""
    if not edits:
        return frame
    pieces, pos = [], 0
    for start, end, replacement in edits:
        pieces += [frame[pos:start], replacement]
        pos = end
    pieces.append(frame[pos:])
    return b"".join(pieces)


_CONTROL, _TRANSACTIONAL = 0x20, 0x10   # a record batch's attribute bits
_CLIENT = b"pomset-front"


def _batch_markers(frame: bytes, start: int, end: int) -> Dict[Tuple[int, int], int]:
    """The transactions whose end markers lie in the record batches from `start` to `end`:
    (producer id, first offset) -> the marker's offset. A producer's transaction begins at its
    first transactional batch after its previous marker; one begun before `start` is seen to
    begin later, at an offset no transaction of that producer begins at, so it matches none."""
    begun: Dict[int, int] = {}
    markers: Dict[Tuple[int, int], int] = {}
    pos = start
    while pos + 61 <= end:
        offset, length = struct.unpack_from(">qi", frame, pos)
        attributes = struct.unpack_from(">h", frame, pos + 21)[0]
        producer = struct.unpack_from(">q", frame, pos + 43)[0]
        if attributes & _CONTROL:
            if producer in begun:
                markers[(producer, begun.pop(producer))] = offset
        elif attributes & _TRANSACTIONAL:
            begun.setdefault(producer, offset)
        pos += 12 + max(length, 0)
    return markers


def lookup_request(version: int, topic: bytes, partition: int, offset: int,
                   correlation: int) -> bytes:
    """A Fetch request (v4+, the client's version) for one partition's records from `offset`
    on, uncommitted ones and markers included, answered at once."""
    flexible = version >= 12
    tags = b"\x00" if flexible else b""
    if version >= 13:
        name = topic
    elif flexible:
        name = _uvarint_bytes(len(topic) + 1) + topic
    else:
        name = struct.pack(">h", len(topic)) + topic

    def array(items: List[bytes]) -> bytes:
        return (_uvarint_bytes(len(items) + 1) if flexible
                else struct.pack(">i", len(items))) + b"".join(items)

    part = struct.pack(">i", partition) + (struct.pack(">i", -1) if version >= 9 else b"")
    part += struct.pack(">q", offset) + (struct.pack(">i", -1) if version >= 12 else b"")
    part += (struct.pack(">q", -1) if version >= 5 else b"") + struct.pack(">i", 1 << 30) + tags
    body = b"" if version >= 15 else struct.pack(">i", -1)   # replica id
    body += struct.pack(">iiib", 0, 0, 1 << 30, 0)   # max wait, min and max bytes, uncommitted
    body += struct.pack(">ii", 0, -1) if version >= 7 else b""   # no fetch session
    body += array([name + array([part]) + tags])
    body += array([]) if version >= 7 else b""   # forgotten topics
    body += (b"\x01" if flexible else b"\x00\x00") if version >= 11 else b""   # rack id ""
    header = struct.pack(">hhih", FETCH, version, correlation, len(_CLIENT)) + _CLIENT + tags
    return header + body + tags


class AbortEnds:
    """Where aborted transactions ended, looked up from the broker on a connection of its own
    and remembered (the log below a marker does not change): `known` by (topic, partition,
    producer id, first offset), the marker's offset."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.known: Dict[AbortKey, int] = {}
        self._lock = asyncio.Lock()
        self._streams: Optional[Tuple[asyncio.StreamReader, asyncio.StreamWriter]] = None
        self._correlation = 0

    async def learn(self, keys: List[AbortKey], version: int) -> None:
        """Look up the ends of those of `keys` not known yet: one read of each partition from
        the earliest of its unknown transactions' first offsets finds them all."""
        async with self._lock:
            earliest: Dict[Partition, int] = {}
            for topic, partition, _, first in keys:
                if (topic, partition, _, first) not in self.known:
                    earliest[(topic, partition)] = min(earliest.get((topic, partition), first),
                                                       first)
            for (topic, partition), first in earliest.items():
                frame = await self._ask(lookup_request(version, topic, partition, first,
                                                       self._next()))
                for p in (_readable(frame, version) or []) if frame else []:
                    if (p.topic, p.partition) == (topic, partition):
                        for (producer, begun), marker in _batch_markers(frame, p.start,
                                                                        p.end).items():
                            self.known[(topic, partition, producer, begun)] = marker

    def _next(self) -> int:
        self._correlation = (self._correlation + 1) & 0x7FFFFFFF
        return self._correlation

    async def _ask(self, frame: bytes) -> Optional[bytes]:
        """The broker's answer to `frame`; None where it cannot be had (the connection is
        opened again at the next ask)."""
        try:
            if self._streams is None:
                self._streams = await asyncio.open_connection("127.0.0.1", self.upstream_port)
            reader, writer = self._streams
            _write(writer, frame)
            await writer.drain()
            answer = await _frame(reader)
        except OSError:
            answer = None
        if answer is None and self._streams is not None:
            self._streams[1].close()
            self._streams = None
        return answer


class _Asked:
    """A request sent upstream: its frame, API key and version, for a Fetch that may be held,
    until when (monotonic seconds), and for a Fetch, what it asks of its response's records."""

    __slots__ = ("correlation", "frame", "api_key", "version", "until", "fetch")

    def __init__(self, correlation: int, frame: bytes, api_key: int, version: int,
                 until: Optional[float], fetch: Optional[FetchAsk]) -> None:
        self.correlation, self.frame, self.api_key = correlation, frame, api_key
        self.version, self.until, self.fetch = version, until, fetch


class _Connection:
    """One client's connection and its own to the broker. `sent`: the requests upstream, in
    the order sent (the broker answers in that order); `order`: the correlation ids the
    client waits for, in the order it asked; `answered`: responses not yet its turn. The
    broker's address in its answers (`where`: its host and port as they are encoded there)
    becomes the front's, so that clients keep coming here. `ends`: the front's `AbortEnds`."""

    def __init__(self, client: asyncio.StreamWriter, upstream: asyncio.StreamWriter,
                 where: Tuple[bytes, bytes], ends: AbortEnds) -> None:
        self.client, self.upstream, self.where, self.ends = client, upstream, where, ends
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
                                        r.fetch))
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
            if asked.fetch is not None:
                frame = await self._fetched(frame, asked.version, asked.fetch)
            self.answered[asked.correlation] = frame
            while self.order and self.order[0] in self.answered:
                _write(self.client, self.answered.pop(self.order.popleft()))
            await self.client.drain()

    async def _fetched(self, frame: bytes, version: int, fetch: FetchAsk) -> bytes:
        """A Fetch response as a Kafka broker answers (`answer`), the ends of the aborted
        transactions it needs looked up first."""
        partitions, ends = None, None
        if fetch.read_committed:
            partitions = _readable(frame, version)
            stale = stale_aborts(partitions or [], fetch)
            if stale:
                await self.ends.learn(stale, version)
                ends = self.ends.known
        return answer(frame, version, fetch, ends, partitions)

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


async def _serve(port: int, upstream_port: int, ends: AbortEnds,
                 client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
    try:
        up_r, up_w = await asyncio.open_connection("127.0.0.1", upstream_port)
    except OSError:
        client_w.close()
        return
    for w in (client_w, up_w):
        w.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn = _Connection(client_w, up_w, (_address(upstream_port), _address(port)), ends)
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
    ends = AbortEnds(upstream_port)
    server = await asyncio.start_server(
        lambda r, w: _serve(port, upstream_port, ends, r, w), "127.0.0.1", port,
        reuse_address=True)
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
