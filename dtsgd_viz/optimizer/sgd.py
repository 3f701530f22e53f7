"""``dtsgd_viz.SGD``: the real tf-keras DTensor SGD with observe-only hooks.

Usage, as in the reference documentation (``dtsgd_viz.SGD`` in place of
``tf.keras.optimizers.SGD``):

>>> import tensorflow as tf
>>> import dtsgd_viz
>>> opt = dtsgd_viz.SGD(learning_rate=0.1)
>>> var = tf.Variable(1.0)
>>> loss = lambda: (var ** 2)/2.0         # d(loss)/d(var1) = var1
>>> step_count = opt.minimize(loss, [var]).numpy()
>>> # Step is `- learning_rate * grad`
>>> var.numpy()
0.9
>>> opt = dtsgd_viz.SGD(0.1, momentum=0.9)
>>> var = tf.Variable(1.0)
>>> val0 = var.value()
>>> loss = lambda: (var ** 2)/2.0         # d(loss)/d(var1) = var1
>>> # First step is `- learning_rate * grad`
>>> step_count = opt.minimize(loss, [var]).numpy()
>>> val1 = var.value()
>>> (val0 - val1).numpy()
0.1
>>> # On later steps, step-size increases because of momentum
>>> step_count = opt.minimize(loss, [var]).numpy()
>>> val2 = var.value()
>>> (val1 - val2).numpy()
0.18
>>> step_count
2
"""

from __future__ import annotations

import warnings
from typing import Any, cast

import tensorflow as tf
import tf_keras

from .. import dtensor as _dtensor
from ..dtensor import keras3 as _keras3
from ..hooks import LazyValues, UpdateEvent
from . import config as _config
from . import ema as _ema
from . import mixed_precision as _mixed
from . import options as _options

_BaseSGD = tf_keras.dtensor.experimental.optimizers.SGD


# Saved configs name it "dtsgd_viz>SGD": under plain "SGD", tf-keras' loaders always
# build their own SGD, whatever custom_objects say.
@tf_keras.saving.register_keras_serializable(package="dtsgd_viz")
class SGD(_BaseSGD):
    """Gradient descent with momentum on a DTensor mesh, with observe-only hooks.

    It *is* ``tf_keras.dtensor.experimental.optimizers.SGD`` (a subclass) and takes
    the reference constructor::

        SGD(learning_rate=0.01, momentum=0.0, nesterov=False, amsgrad=False,
            gradients_clip_option=None, ema_option=None, jit_compile=False,
            name="SGD", mesh=None, hooks=())

    ``gradients_clip_option`` is a ``GradientsClipOption`` or a dict with keys
    ``clipnorm``/``clipvalue``/``global_clipnorm``; ``ema_option`` is an ``EMAOption``
    or a dict with keys ``use_ema``/``ema_momentum``/``ema_overwrite_frequency``.
    The tf-keras keyword arguments themselves (``clipnorm=...``, ``use_ema=...``,
    ``weight_decay=...``) are accepted too, which is what ``from_config`` passes.
    ``amsgrad=True`` is an error: SGD has no AMSGrad.

    ``exact_update=True`` follows the documented rule exactly inside DTensor
    ``tf.function``s, where tf-keras' update can move a parameter with the previous
    step's velocity (see ``update_step``); use it for training. The default stays
    bit-identical to tf-keras, and a ``Recorder`` warns when it sees the stale
    velocity.

    On a mesh, sparse gradients (``tf.IndexedSlices``, from an ``Embedding``) are
    made dense before the update: DTensor cannot lay out the sparse update
    (``ResourceScatterAdd``). That costs a dense gradient of the whole table per
    step; a warning says so once per variable.

    ``use_ema`` works on a mesh: the averages follow tf-keras' formula after every
    step and ``finalize_variable_values`` writes them (tf-keras' own DTensor
    optimizers never update them there; see ``dtsgd_viz.optimizer.ema``). ``get_config``
    holds the mesh as a ``MeshSpec`` dict, and ``from_config`` rebuilds it.

    ``hooks`` observe every update (see ``dtsgd_viz.Recorder``); they are not part
    of ``get_config``. Under a dynamic loss scale ``MeshLossScaleOptimizer`` tells them of
    each update it skips (their ``skipped_update`` method); any other dynamic loss scale
    is refused with hooks, when it wraps this optimizer or when a hook is added.
    ``minimize`` and ``apply_gradients`` return the iteration
    count after the update, and accept ``loss=`` so hooks can record it
    (``minimize`` reports its loss itself).
    """

    def __init__(
        self,
        learning_rate: Any = 0.01,
        momentum: Any = 0.0,
        nesterov: Any = False,
        amsgrad: Any = False,
        gradients_clip_option: Any = None,
        ema_option: Any = None,
        jit_compile: Any = False,
        name: Any = "SGD",
        mesh: Any = None,
        hooks: Any = (),
        exact_update: Any = False,
        **kwargs: Any,
    ):
        _keras3.check(learning_rate, "learning_rate")
        _options._check_hyperparameters(learning_rate, momentum, nesterov, amsgrad)
        _options._add_options(kwargs, gradients_clip_option, ema_option)
        _options._check_mesh(mesh)
        super().__init__(
            learning_rate=learning_rate,
            momentum=momentum,
            nesterov=nesterov,
            jit_compile=jit_compile,
            name=name,
            mesh=mesh,
            **kwargs,
        )
        self.exact_update = _options._exact_update(exact_update)
        self._densified = set()
        self._loss_scale_wrapper = None  # a _mixed.LossScaleWrapping once one wraps it
        self._hooks = []
        self._pending_loss = None
        for hook in hooks:
            self.add_hook(hook)

    # ---- hooks ------------------------------------------------------------------

    @property
    def hooks(self) -> tuple:
        return tuple(self._hooks)

    @property
    def mesh(self) -> Any:
        return self._mesh

    def __repr__(self) -> str:
        # Keras 3's compile() shows this when handed a tf-keras optimizer by mistake
        try:
            lr = f"{float(self.learning_rate):g}"
        except (TypeError, ValueError):
            lr = type(self._learning_rate).__name__
        mesh = None if self._mesh is None else dict(zip(self._mesh.dim_names, self._mesh.shape()))
        return (
            f"<dtsgd_viz.SGD, a tf-keras (Keras 2) optimizer: learning_rate={lr}, "
            f"momentum={self.momentum}, nesterov={self.nesterov}, mesh={mesh}, "
            f"exact_update={self.exact_update}>"
        )

    def add_hook(self, hook: Any) -> Any:
        """Attach an observer (a ``Recorder``, or anything implementing ``dtsgd_viz.Hook``).

        Attach before the first update: a ``tf.function`` traced without the hook
        will not call it.
        """
        for method in ("on_build", "before_update", "after_update"):
            if not callable(getattr(hook, method, None)):
                raise TypeError(
                    f"A hook needs methods on_build, before_update and after_update; "
                    f"{type(hook).__name__} has no {method}."
                )
        error = _mixed.loss_scale_hooks_error(self._loss_scale_wrapper, [*self._hooks, hook])
        if error is not None:
            raise error
        self._hooks.append(hook)
        if getattr(self, "_built", False):
            hook.on_build(self, self._built_variables)
        return hook

    def build(self, var_list: Any) -> None:
        var_list = list(var_list)
        _keras3.check_all(var_list, "A variable handed to dtsgd_viz.SGD")
        already = getattr(self, "_built", False)
        if not already and self._mesh is not None:
            _mixed.check_variables(var_list)
        super().build(var_list)
        if not already:
            # hooks see the float32 master weights, not their mixed precision wrappers
            self._built_variables = _mixed.unwrap(var_list)
            for hook in self._hooks:
                hook.on_build(self, self._built_variables)

    # ---- a loss scale optimizer wrapping it ----------------------------------------------

    @property
    def _is_wrapped_by_loss_scale_optimizer(self) -> bool:
        """tf-keras' mark of an optimizer a ``LossScaleOptimizer`` wraps."""
        return getattr(self, "_loss_scale_wrapper", None) is not None

    @_is_wrapped_by_loss_scale_optimizer.setter
    def _is_wrapped_by_loss_scale_optimizer(self, value):
        # tf-keras sets it in the wrapper's constructor, whether this optimizer was built
        # before (a checkpoint restored before model.compile) or after: the one moment
        # every wrapping shows itself here, so hooks are checked against it now
        wrapper = _mixed.wrapping(self) if value else None
        error = _mixed.loss_scale_hooks_error(wrapper, getattr(self, "_hooks", ()))
        if error is not None:
            raise error  # before the mark: the optimizer can still be wrapped otherwise
        self._loss_scale_wrapper = wrapper

    def report_skipped_update(self, loss_scale: Any) -> None:
        """Tell the hooks of an update a dynamic loss scale skips (``MeshLossScaleOptimizer``
        calls it eagerly, or traced into the branch of the step that skips the update,
        before ``iterations`` counts it): each hook's ``skipped_update(optimizer,
        iteration, loss_scale)`` gets the iteration the skipped update makes and the loss
        scale it used."""
        if not self._hooks:
            return
        iteration = self.iterations.read_value() + 1
        for hook in self._hooks:
            hook.skipped_update(self, iteration, loss_scale)

    def update_step(self, gradient: Any, variable: Any) -> Any:
        """tf-keras' update, or with ``exact_update=True`` the same arithmetic
        with the new velocity passed as a value instead of re-read from its slot.

        Inside a DTensor ``tf.function`` tf-keras' re-read of the slot after assigning
        it can see the *old* velocity (seen here on a LayoutMap-sharded MLP with
        batch-sharded data: momentum then lags one step). The data-dependent form
        cannot be reordered and gives the documented rule; by default the optimizer
        stays bit-identical to tf-keras.
        """
        if not self.exact_update or isinstance(gradient, tf.IndexedSlices):
            return super().update_step(gradient, variable)
        lr = tf.cast(self.learning_rate, variable.dtype)
        momentum = tf.cast(self.momentum, variable.dtype)
        m = self.momentums[self._index_dict[self._var_key(variable)]]
        m_new = -gradient * lr + m * momentum
        m.assign(m_new)
        if self.nesterov:
            variable.assign_add(-gradient * lr + m_new * momentum)
        else:
            variable.assign_add(m_new)

    def velocity(self, variable: Any) -> Any:
        """The momentum slot of ``variable``."""
        return self.momentums[self._index_dict[self._var_key(variable)]]

    def _before_hooks(self, variables):
        # Values are read when a hook first looks at them (a traced step then carries no
        # reads that no hook uses); `before` is looked at before the update is built.
        before = LazyValues(lambda: tuple(v.read_value() for v in variables), len(variables))
        for hook in self._hooks:
            hook.before_update(self, variables, before)

    def _apply_weight_decay(self, variables):
        # Weight decay is the update's first change to the parameters: hooks look before
        # it (a recorder reads the previous update's results there).
        if self._hooks:
            self._before_hooks(_mixed.unwrap(variables))
            self._hooks_looked_before = True
        return super()._apply_weight_decay(variables)

    def _internal_apply_gradients(self, grads_and_vars):
        grads_and_vars = list(grads_and_vars)
        if not self._hooks:
            return super()._internal_apply_gradients(grads_and_vars)
        variables = _mixed.unwrap(v for _, v in grads_and_vars)
        grads = tuple(g for g, _ in grads_and_vars)
        if not getattr(self, "_hooks_looked_before", False):
            self._before_hooks(variables)
        self._hooks_looked_before = False
        iteration = super()._internal_apply_gradients(grads_and_vars)

        def after(read):
            # Read after every update has run: the explicit dependency keeps DTensor's
            # graph passes from hoisting these reads above the assignments.
            def values():
                with tf.control_dependencies([iteration]):
                    return tuple(tf.identity(read(v)) for v in variables)

            return LazyValues(values, len(variables))

        with tf.control_dependencies([iteration]):
            event = UpdateEvent(
                optimizer=self,
                variables=variables,
                grads=grads,
                # LazyValues: a Sequence read on first use (hooks.UpdateEvent says tuple)
                params=cast(tuple, after(lambda v: v.read_value())),
                velocities=cast(tuple, after(lambda v: self.velocity(v).read_value())),
                iteration=tf.identity(self.iterations.read_value()),
                learning_rate=tf.identity(self.learning_rate),
                loss=self._pending_loss,
            )
        for hook in self._hooks:
            hook.after_update(event)
        return iteration

    # ---- documented behaviour ----------------------------------------------------

    def apply_gradients(self, grads_and_vars: Any, name: str | None = None, loss: Any = None, **kwargs: Any) -> Any:
        """Apply gradients; returns the iteration count after the update.

        ``loss`` (optional) is passed to hooks so recordings can show it.
        """
        grads_and_vars = list(grads_and_vars)
        _keras3.check_all((v for _, v in grads_and_vars), "A variable handed to dtsgd_viz.SGD")
        _keras3.check_all((g for g, _ in grads_and_vars), "A gradient handed to dtsgd_viz.SGD")
        if self._mesh is not None:
            grads_and_vars = [(self._densify(g, v), v) for g, v in grads_and_vars]
            if self.exact_update:
                grads_and_vars = [(_pin_layout(g, v), v) for g, v in grads_and_vars]
        self._pending_loss = loss
        try:
            # not super(): autograph's zero-argument super() snapshots every frame's locals,
            # keeping the caller's optimizer, recorder and step alive after it deletes them
            result = super(SGD, self).apply_gradients(grads_and_vars, name=name, **kwargs)  # noqa: UP008
        finally:
            self._pending_loss = None
        return result

    def _densify(self, grad, var):
        """A sparse gradient as a dense one laid out like ``var`` (DTensor has no layout
        propagation for the sparse update, ``ResourceScatterAdd``)."""
        if not isinstance(grad, tf.IndexedSlices):
            return grad
        key = self._var_key(var)
        if key not in self._densified:
            self._densified.add(key)
            nbytes = var.shape.num_elements() * var.dtype.size
            warnings.warn(
                f"dtsgd_viz.SGD: the gradient of {var.name.removesuffix(':0')!r} is sparse (tf.IndexedSlices, "
                "e.g. from an Embedding); DTensor cannot apply sparse updates on a mesh, so "
                f"it is made dense: one dense {tuple(var.shape)} {var.dtype.name} gradient "
                f"({nbytes:,} bytes, laid out like the variable) per step, and the recorded "
                "gradient is that dense one.",
                RuntimeWarning,
                stacklevel=3,
            )
        return _dtensor.match_layout(tf.convert_to_tensor(grad), var)

    def compute_gradients(self, loss: Any, var_list: Any, tape: tf.GradientTape | None = None) -> list:
        """As tf-keras, and also eagerly on a mesh.

        Eager DTensor backprop seeds the tape with a plain ``1.0``, which turns the
        gradient of a sum into a plain tensor that DTensor ops then reject; seeding
        it with ``ones_like(loss)`` keeps it on the mesh. Graph mode is unaffected.
        """
        if not callable(loss) and tape is None:
            raise ValueError(f"`tape` is required when a `Tensor` loss is passed. Received: loss={loss}, tape={tape}.")
        if tape is None:
            tape = tf.GradientTape()
        if callable(loss):
            with tape:
                if not callable(var_list):
                    tape.watch(var_list)
                loss = loss()
                if callable(var_list):
                    var_list = var_list()
        self._last_loss = loss
        seed = None
        if self._mesh is not None and tf.executing_eagerly() and _dtensor.is_dtensor(loss):
            seed = tf.ones_like(loss)
        grads = tape.gradient(loss, var_list, output_gradients=seed)
        return list(zip(grads, var_list))

    def minimize(self, loss: Any, var_list: Any, tape: tf.GradientTape | None = None) -> Any:
        """Minimize ``loss`` over ``var_list``; returns the iteration count (as documented)
        and reports the loss to the hooks."""
        grads_and_vars = self.compute_gradients(loss, var_list, tape)
        loss_value, self._last_loss = self._last_loss, None
        return self.apply_gradients(grads_and_vars, loss=loss_value)

    def _update_step(self, gradient, variable):
        # tf-keras never updates the moving averages on a mesh (see _ema).
        if self.use_ema and self._mesh is not None:
            return _ema.update_with_average(self, super()._update_step, gradient, variable)
        return super()._update_step(gradient, variable)

    def finalize_variable_values(self, var_list: Any) -> None:
        """As tf-keras (``model.fit`` calls it at its end): with ``use_ema`` the weights
        become their moving averages. Hooks that ``flush`` (a ``Recorder``) do so first,
        so the last step is recorded with the weights it produced."""
        if self.use_ema:
            for hook in self._hooks:
                if callable(getattr(hook, "flush", None)):
                    hook.flush()
        super().finalize_variable_values(var_list)

    def get_config(self) -> dict:
        config = super().get_config()
        if self.exact_update:
            config["exact_update"] = True
        # plain JSON: tf-keras gives the learning rate as a numpy scalar
        config = {k: v.item() if hasattr(v, "item") and not isinstance(v, dict) else v for k, v in config.items()}
        config["mesh"] = _config.mesh_to_config(self._mesh)  # a MeshSpec dict, or None
        return config

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> Any:
        """As tf-keras, and the mesh comes back (``ValueError`` when this process lacks
        its devices)."""
        config = dict(config)
        config.pop("is_legacy_optimizer", None)
        if "mesh" in config:
            config["mesh"] = _config.mesh_from_config(config["mesh"])
        return super().from_config(config, custom_objects=custom_objects)


def _pin_layout(gradient, variable):
    """``gradient`` relaid to ``variable``'s layout (a copy of the same values), as the
    exact update takes it on a mesh. DTensor's layout propagation can give a kernel's
    gradient ``x^T @ dy`` the transpose of its variable's layout; tf-keras' update then
    converts the velocity and its results with all-to-alls every step. Relaid where the
    gradient is made, the layout propagates back into the gradient's own computation and
    those all-to-alls go (docs/upstream.md; ``benchmarks/gradient_layout/``). Traced, the
    gradient's layout is not known yet, so it is always relaid (a no-op where it matches)."""
    layout = getattr(variable, "layout", None)  # a DVariable's own (no read in the trace)
    if layout is None or gradient is None:
        return gradient
    if tf.executing_eagerly():
        return _dtensor.match_layout(gradient, variable)
    return _dtensor.relayout(gradient, layout)
