"""Plain tf-keras reproduction (no dtsgd_viz code in the step): DTensor SGD on the 40 x
Dense(64) LayoutMap MLP (kernels [unsharded, model], biases [model], 2x4 mesh) gets
faster when each gradient is relaid to its variable's layout, dtensor.relayout(g,
v.layout): either fed to the update, or only on a side branch (the stats Recorder's
pattern). Also checks bit for bit, after 30 steps, against the unchanged step.

    cd benchmarks/gradient_layout && timeout -k 10 900 ../../.venv/bin/python \
        repro_plain_tfkeras.py [first-call order, e.g. psr]

(common.py builds model and data with tf / tf_keras only; dtsgd_viz is used for
setup_devices / make_mesh and to unpack shards.)
"""

import sys

import common
import numpy as np
import tf_keras
from common import Variant, build_model, first_calls, make_step, measure, op_counts, report
from variants import control_pin_apply, plain_apply, relayout_apply, side_relayout_apply

from dtsgd_viz import dtensor as _dtensor

STEPS = 30
WRAPS = {
    "p": ("plain tf-keras DTensor SGD", plain_apply),
    "r": ("+ relayout(g, v.layout) fed to the update", relayout_apply),
    "s": ("+ relayout(g, v.layout) on a side branch only", side_relayout_apply),
    "c": ("+ relayout(g, v.layout) as a control dependency only", control_pin_apply),
}


def opt():
    return tf_keras.dtensor.experimental.optimizers.SGD(**common.NESTEROV, mesh=common.MESH, jit_compile=False)


def bits(wrap):
    o = opt()
    step = make_step(o, model=build_model(seed=0), wrap=wrap)
    out = [_dtensor.unpack(step()) for _ in range(STEPS)]
    vs = step.model.trainable_variables
    out += [_dtensor.unpack(v) for v in vs]
    out += [_dtensor.unpack(o.momentums[o._index_dict[o._var_key(v)]]) for v in vs]
    return [np.asarray(s).view(np.uint32) for x in out for s in x]


ref = bits(plain_apply)
print(f"\nbit for bit after {STEPS} steps (losses, every shard of every parameter and velocity):")
for k in "rsc":
    same = all(np.array_equal(a, b) for a, b in zip(ref, bits(WRAPS[k][1])))
    print(f"  {WRAPS[k][0]}: {'identical to plain' if same else 'DIFFERS from plain'}")

order = sys.argv[1] if len(sys.argv) > 1 else "pcsr"
made = {k: Variant(WRAPS[k][0], make_step(opt(), wrap=WRAPS[k][1])) for k in order}
first_calls([made[k] for k in order])
measure([made[k] for k in order], rounds=12)
report([made[k] for k in "pcsr" if k in made], f"plain tf-keras, first-call order {order}")
for k in "pcsr":
    if k not in made:
        continue
    c = op_counts(made[k].step_fn)
    print(f"  {made[k].name}: traced graph ops {sum(c.values())}, Relayout ops {c['Relayout']}")
