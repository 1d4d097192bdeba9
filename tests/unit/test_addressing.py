"""Addresses as users type them: every accepted spelling, and clear errors for the rest."""

import pytest

from xsched.protocol.addressing import (
    AddressError, interface_address, is_loopback, join, local_ip_for, normalize, resolve, split,
)


@pytest.mark.parametrize("text, expected", [
    ("localhost:8786", "tcp://127.0.0.1:8786"),
    ("127.0.0.1:9000", "tcp://127.0.0.1:9000"),
    ("tcp://10.0.0.5:8786", "tcp://10.0.0.5:8786"),
    ("10.0.0.5", "tcp://10.0.0.5:8786"),
    ("node1", "tcp://node1:8786"),
    ("tcp://node1.cluster.example:1234", "tcp://node1.cluster.example:1234"),
    ("[::1]:8786", "tcp://[::1]:8786"),
    ("tcp://[::1]:8786", "tcp://[::1]:8786"),
    ("[fe80::1]", "tcp://[fe80::1]:8786"),
    ("::1", "tcp://[::1]:8786"),
    ("  localhost:1  ", "tcp://127.0.0.1:1"),
])
def test_accepted_spellings(text, expected):
    assert normalize(text) == expected
    assert normalize(normalize(text)) == expected  # idempotent


@pytest.mark.parametrize("text, says", [
    ("", "non-empty"),
    ("localhost:port", "'port' is not a number"),
    ("localhost:99999", "outside 0-65535"),
    ("udp://host:1", "only tcp://"),
    ("ipc:///tmp/x", "only tcp://"),
    ("[::1:8786", "unclosed IPv6 bracket"),
    ("tcp://:8786", "no usable host"),
    ("tcp://a b:1", "no usable host"),
])
def test_bad_addresses_name_themselves(text, says):
    with pytest.raises(AddressError, match=says) as info:
        normalize(text)
    assert repr(text) in str(info.value) or text == ""
    assert isinstance(info.value, ValueError)


def test_non_string_address():
    with pytest.raises(AddressError, match="non-empty string"):
        normalize(8786)


def test_split_and_join_round_trip():
    assert split("tcp://[::1]:5") == ("::1", 5)
    assert join("::1", 5) == "tcp://[::1]:5" and join("[::1]", 5) == "tcp://[::1]:5"
    assert split("host", default_port=1) == ("host", 1)
    with pytest.raises(AddressError, match="no port"):
        split("host", default_port=None)


def test_loopback():
    assert is_loopback("tcp://127.0.0.1:1") and is_loopback("127.3.4.5:1") and is_loopback("localhost")
    assert is_loopback("[::1]:1") and is_loopback("::1")
    assert not is_loopback("10.0.0.5:1") and not is_loopback("node1:1") and not is_loopback("garbage:x")


def test_interfaces_and_routes():
    assert interface_address("lo") == "127.0.0.1"
    with pytest.raises(AddressError, match="no network interface named 'nosuch0'.*lo"):
        interface_address("nosuch0")
    assert local_ip_for("tcp://127.0.0.1:8786") == "127.0.0.1"
    assert local_ip_for("[::1]:8786") == "::1"
    assert "127.0.0.1" in resolve("localhost") and resolve("no-such-host.invalid") == set()
    with pytest.raises(AddressError, match="cannot resolve"):
        local_ip_for("no-such-host.invalid:1")
