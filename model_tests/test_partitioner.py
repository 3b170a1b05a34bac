"""The Java client's default partitioner: murmur2 bit for bit, and round-robin for null keys."""

from __future__ import annotations

import random
import shutil
import subprocess
import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from impl.partitioner import RoundRobinPartitioner, murmur2, partition_for_key, to_positive

# Kafka's UtilsTest.testMurmur2, then vectors published by librdkafka and kafkajs for the
# same function (signed 32-bit, as Java returns them). Lengths cover every remainder mod 4.
VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
    b"": 275646681,
    b"kafka": -798503068,
    b"giberish123456789": -1890243828,
    b"1234": -1614185708,
    b"234": -406844982,
    b"34": -2026295078,
    b"4": 1514888353,
    b"PreAmbleWillBeRemoved,ThePrePartThatIs": 2017611548,
    b"0": 971027396,
    b"100:48069": 1009543857,
}


@pytest.mark.parametrize(("key", "expected"), sorted(VECTORS.items()))
def test_murmur2_matches_the_java_client(key, expected):
    assert murmur2(key) == expected


def test_partition_is_the_positive_hash_modulo_the_partition_count():
    # to_positive(-790332482) == 1357151166, and 1357151166 % 50 == 16
    assert to_positive(murmur2(b"foobar")) == 1357151166
    assert partition_for_key(b"foobar", 50) == 16


def test_to_positive_masks_the_sign_bit_instead_of_negating():
    assert to_positive(-(2**31)) == 0  # abs() would overflow in Java
    assert to_positive(-1) == 2**31 - 1
    assert to_positive(5) == 5


@given(st.binary(max_size=64), st.integers(1, 10_000))
def test_a_key_always_lands_in_range_and_on_the_same_partition(key, n):
    p = partition_for_key(key, n)
    assert 0 <= p < n
    assert partition_for_key(bytes(key), n) == p
    assert -(2**31) <= murmur2(key) < 2**31


def test_zero_partitions_is_an_error():
    with pytest.raises(ValueError, match="at least one partition"):
        partition_for_key(b"k", 0)


_JAVA = textwrap.dedent(
    """
    import java.io.*;
    public class Murmur {
        // org.apache.kafka.common.utils.Utils.murmur2, in Java's own int arithmetic.
        static int murmur2(final byte[] data) {
            int length = data.length, seed = 0x9747b28c;
            final int m = 0x5bd1e995, r = 24;
            int h = seed ^ length;
            int length4 = length / 4;
            for (int i = 0; i < length4; i++) {
                final int i4 = i * 4;
                int k = (data[i4] & 0xff) + ((data[i4 + 1] & 0xff) << 8)
                    + ((data[i4 + 2] & 0xff) << 16) + ((data[i4 + 3] & 0xff) << 24);
                k *= m; k ^= k >>> r; k *= m; h *= m; h ^= k;
            }
            switch (length % 4) {
                case 3: h ^= (data[(length & ~3) + 2] & 0xff) << 16;
                case 2: h ^= (data[(length & ~3) + 1] & 0xff) << 8;
                case 1: h ^= data[length & ~3] & 0xff; h *= m;
            }
            h ^= h >>> 13; h *= m; h ^= h >>> 15;
            return h;
        }
        public static void main(String[] args) throws IOException {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
            String line;
            while ((line = in.readLine()) != null) {
                byte[] b = new byte[line.length() / 2];
                for (int i = 0; i < b.length; i++)
                    b[i] = (byte) Integer.parseInt(line.substring(2 * i, 2 * i + 2), 16);
                System.out.println(murmur2(b));
            }
        }
    }
    """
)


@pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK (java on PATH)")
def test_murmur2_agrees_with_java_int_arithmetic_on_random_keys(tmp_path):
    rng = random.Random(20240229)
    keys = [rng.randbytes(rng.randrange(0, 40)) for _ in range(300)] + [b"\xff" * 7, b"\x80"]
    source = tmp_path / "Murmur.java"
    source.write_text(_JAVA)
    result = subprocess.run(
        ["java", str(source)],
        input="\n".join(k.hex() for k in keys) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert [int(x) for x in result.stdout.split()] == [murmur2(k) for k in keys]


# ---------------------------------------------------------------------------- null keys


def test_null_keys_go_round_robin_with_one_counter_per_topic():
    partitioner = RoundRobinPartitioner()
    assert [partitioner.partition("a", None, 3) for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0]
    assert [partitioner.partition("b", None, 3) for _ in range(2)] == [0, 1]
    assert partitioner.partition("a", None, 3) == 1


def test_null_keys_prefer_available_partitions():
    partitioner = RoundRobinPartitioner()
    picks = [partitioner.partition("t", None, 5, available=[4, 1]) for _ in range(4)]
    assert picks == [1, 4, 1, 4]


def test_keyed_records_ignore_availability():
    partitioner = RoundRobinPartitioner()
    assert partitioner.partition("t", b"foobar", 50, available=[0]) == 16


def test_round_robin_counter_wraps_like_a_java_int():
    class MaxFirst(random.Random):
        def getrandbits(self, k: int) -> int:
            return 0x7FFFFFFF

    partitioner = RoundRobinPartitioner(MaxFirst())
    # 2147483647 % 10 == 7, then the counter wraps to -2^31, whose positive form is 0
    assert [partitioner.partition("t", None, 10) for _ in range(3)] == [7, 0, 1]


def test_a_seeded_partitioner_is_reproducible():
    def picks(seed: int) -> list[int]:
        partitioner = RoundRobinPartitioner(random.Random(seed))
        return [partitioner.partition(t, None, 7) for t in ("x", "y", "x", "z", "y")]

    assert picks(1) == picks(1)
    assert len({tuple(picks(seed)) for seed in range(10)}) > 1
