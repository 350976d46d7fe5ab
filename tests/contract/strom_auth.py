"""schemathesis hooks for strom's management API: every request carries `salt` and
`hash = base64(md5("<salt>/<token>"))` in its query (STROM_TOKEN in the environment)."""

import base64
import hashlib
import os

import schemathesis


@schemathesis.auth()
class StromAuth:
    def get(self, case, context):
        salt = "17"
        token = os.environ["STROM_TOKEN"]
        digest = hashlib.md5(f"{salt}/{token}".encode()).digest()
        return salt, base64.b64encode(digest).decode()

    def set(self, case, data, context):
        salt, hash_value = data
        query = dict(case.query or {})
        query["salt"] = salt
        query["hash"] = hash_value
        case.query = query
