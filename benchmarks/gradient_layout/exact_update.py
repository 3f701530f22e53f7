"""What ``dtsgd_viz.SGD(exact_update=True)`` costs next to plain tf-keras DTensor SGD on
the 40 x Dense(64) LayoutMap MLP (2x4 mesh; 80 variables), now that the exact update
relays each gradient to its variable's layout (``optimizer/sgd.py: _pin_layout``).

    cd benchmarks/gradient_layout && LAYOUT=col timeout -k 10 900 ../../.venv/bin/python exact_update.py

``LAYOUT``: ``col`` (kernels [unsharded, model], the issue's model), ``megatron``
(alternating [unsharded, model] / [model, unsharded]), ``row`` ([model, unsharded]) or
``rep`` (replicated). Variants, interleaved, each its own model copy: plain tf-keras
DTensor SGD; dtsgd_viz.SGD (default, bit-identical to tf-keras); dtsgd_viz.SGD with
``exact_update=True``. Ratios are medians over paired rounds (``common.report``), and
the counts of all-to-alls in the compiled per-device program come from
``dtsgd_viz.communication``.
"""

from collections import Counter

import common
import tf_keras
from common import Variant, first_calls, make_step, measure, report

import dtsgd_viz


def _sgd(exact=None):
    if exact is None:
        return tf_keras.dtensor.experimental.optimizers.SGD(**common.NESTEROV, mesh=common.MESH)
    return dtsgd_viz.SGD(**common.NESTEROV, mesh=common.MESH, exact_update=exact)


made = [
    Variant("plain tf-keras DTensor SGD", make_step(_sgd(), pass_loss=False)),
    Variant("dtsgd_viz.SGD (default)", make_step(_sgd(False), pass_loss=False)),
    Variant("dtsgd_viz.SGD(exact_update=True)", make_step(_sgd(True), pass_loss=False)),
]
first_calls(made)
measure(made, rounds=12)
report(made, f"{common.LAYERS} x Dense({common.WIDTH}), kernels {common.LAYOUT!r}, 2x4 mesh")
for v in made:
    kinds = Counter(c.kind for c in dtsgd_viz.communication(v.step_fn).collectives)
    print(f"  {v.name}: collectives {dict(kinds)}")
