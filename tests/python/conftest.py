import os
import sys

import pytest

# dynet reads --dynet-* flags from sys.argv at import; pytest's own arguments are not for it.
sys.argv = sys.argv[:1]

import dynet_config  # noqa: E402

dynet_config.set(random_seed=5)

import dynet as dy  # noqa: E402

REPO = os.environ.get("DYNET_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))


@pytest.fixture(autouse=True)
def fresh_graph():
    dy.renew_cg()
    yield
