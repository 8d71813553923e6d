"""The verification snippet of docs/notifications.md really verifies aipool's signatures."""

import re
import time
from pathlib import Path

from notifications.signing import sign

DOC = Path(__file__).resolve().parents[2] / "docs" / "notifications.md"


def docs_verify():
    code = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    namespace: dict = {}
    exec(compile(code, str(DOC), "exec"), namespace)  # noqa: S102  (our own documentation)
    return namespace["verify"]


def test_the_documented_receiver_check_accepts_our_signatures_and_refuses_tampering():
    verify = docs_verify()
    stamp = int(time.time())
    body = b'{"event":"job.ended"}'
    signature = sign("whsec_abc", stamp, body)
    assert verify("whsec_abc", str(stamp), signature, body)
    assert not verify("whsec_abc", str(stamp), signature, body + b" ")
    assert not verify("whsec_other", str(stamp), signature, body)
    assert not verify("whsec_abc", str(stamp - 3600), sign("whsec_abc", stamp - 3600, body), body)
