import socket

import pytest


def test_outside_addresses_are_refused() -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        with pytest.raises(OSError, match="may not reach the network"):
            s.connect(("93.184.216.34", 80))
    finally:
        s.close()
