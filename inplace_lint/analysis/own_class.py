"""What a class's own code says, for its methods' walk (:class:`OwnClassFacts`), computed when a walk first asks.

flake8 without a project cache walks only the method bodies a finding can come from (:mod:`.relevance`): a class none
of whose methods is walked never needs these facts, and computing them for every class was a tenth of the plugin's
time on verl 0.9.1.
"""
from __future__ import annotations

import ast
from functools import cached_property
from typing import Dict, FrozenSet, List, Tuple

from . import init_args, layer_elements, local_conds, model_outputs, stack_inputs
from .astutil import walk_ast
from .names import qualify_dotted


class OwnClassFacts:
    """The facts of one class (``cls``), each computed on first read (``cached_property``) from one walk of the class
    (:func:`~.model_outputs.class_nodes`):

    - ``frozen_layers``, ``unsaved_layers``: attributes the class freezes, attributes whose call may save no input
      (:func:`~.model_outputs.frozen_layers`, :func:`~.model_outputs.layers_not_saving`);
    - ``identity_layers``, ``zero_dropouts``: attributes that may return their input (``nn.Identity``,
      ``nn.Dropout(0.0)``);
    - ``weights_unknown``: the class may have made its inherited torch weights something other than parameters
      that require grad;
    - ``output_hook``: the class registers a forward hook on itself;
    - ``activation_methods``: its methods that return a submodule's output (:func:`activation_methods`);
    - ``init_flags``, ``init_guards``, ``builder_args``, ``builder_alts``: what ``__init__`` copies from its
      parameters and the constant arguments each submodule was built with (:mod:`.init_args`);
    - ``steady_attrs``: attributes that hold an immutable value, and the methods that assign them;
    - ``torch_stacks``, ``input_layers``, ``inplace_firsts``: ``self.<attr>`` built as a torch activation or a stack,
      the layer its stack starts with (:mod:`.stack_inputs`); ``inplace_elements``: a layer list with an in-place
      layer after its first element (:mod:`.layer_elements`).

    ``names``, ``local_names``, ``layer_builders``, ``stack_builders``: the class scope's imports, its local names and
    the module's layer-building functions, as they stood at the ``class`` statement.
    """

    def __init__(self, cls: ast.ClassDef, names: Dict[str, str], local_names: FrozenSet[str],
                 layer_builders: Dict[str, str], stack_builders: Dict[str, List[List[ast.expr]]]) -> None:
        self._cls = cls
        self._names = names
        self._local_names = local_names
        self._layer_builders = layer_builders
        self._stack_builders = stack_builders

    @cached_property
    def nodes(self) -> list:
        return model_outputs.class_nodes(self._cls)  # (one walk of the class for every fact)

    @cached_property
    def counts(self) -> Dict[str, int]:
        return model_outputs.assignment_counts(self._cls, self.nodes)

    def _qualify(self, dotted: str) -> str:
        """A module function that builds one layer stands for it (``conv3x3(...)``)."""
        dotted = self._layer_builders.get(dotted, dotted)
        return qualify_dotted(dotted, self._names, self._local_names.__contains__)[0] or dotted

    @cached_property
    def frozen_layers(self) -> FrozenSet[str]:
        return model_outputs.frozen_layers(self._cls, self.nodes)

    @cached_property
    def unsaved_layers(self) -> FrozenSet[str]:
        return model_outputs.layers_not_saving(self._cls, self.nodes, self.frozen_layers)

    @cached_property
    def identity_layers(self) -> FrozenSet[str]:
        return model_outputs.identity_layers(self._cls, self.nodes)

    @cached_property
    def weights_unknown(self) -> bool:
        return model_outputs.inherited_weights_unknown(self._cls, self.nodes)

    @cached_property
    def output_hook(self) -> bool:
        # `self.register_forward_hook(self._keep)`: the hook receives what `forward` returns, and may keep it
        return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                   and n.func.attr == "register_forward_hook" for n in self.nodes)

    @cached_property
    def activation_methods(self) -> FrozenSet[str]:
        return activation_methods(self._cls)

    @cached_property
    def init_flags(self) -> Dict[str, Tuple[str, int, tuple]]:
        return init_args.init_flags(self._cls, self.counts)

    @cached_property
    def init_guards(self) -> Dict[str, Tuple[str, int, tuple]]:
        return init_args.init_guards(self._cls, self.counts)

    @cached_property
    def steady_attrs(self) -> Dict[str, FrozenSet[str]]:
        return local_conds.steady_attributes(self._cls, self.nodes)

    @cached_property
    def torch_stacks(self) -> Dict[str, str]:
        return model_outputs.torch_stacks(self._cls, self._qualify, self.counts, self.nodes)

    @cached_property
    def input_layers(self) -> Dict[str, str]:
        return stack_inputs.first_input_layers(
            self._cls, self._qualify, self.counts, self.nodes, self._stack_builders)

    @cached_property
    def inplace_firsts(self) -> Dict[str, str]:
        return stack_inputs.first_inplace_layers(
            self._cls, self._qualify, self.counts, self.nodes, self._stack_builders)

    @cached_property
    def inplace_elements(self) -> Dict[str, str]:
        return layer_elements.inplace_elements(self._cls)

    @cached_property
    def _builder_facts(self):
        return init_args.builder_facts(self._cls, self.counts, self.nodes)

    @property
    def builder_args(self) -> Dict[str, Dict[str, tuple]]:
        return self._builder_facts[0]

    @property
    def builder_alts(self) -> Dict[str, Tuple[Dict[str, tuple], ...]]:
        return self._builder_facts[1]

    @property
    def builder_arms(self) -> Dict[str, Tuple[tuple, ...]]:
        return self._builder_facts[2]

    @cached_property
    def zero_dropouts(self) -> FrozenSet[str]:
        return model_outputs.zero_rate_dropouts(self.identity_layers, self.builder_args)


#: each fact, and what a scope outside any class reads for it
OUTSIDE_A_CLASS: Dict[str, object] = {
    "frozen_layers": frozenset(), "unsaved_layers": frozenset(), "identity_layers": frozenset(),
    "weights_unknown": False, "output_hook": False, "activation_methods": frozenset(), "init_flags": {},
    "init_guards": {}, "steady_attrs": {}, "torch_stacks": {}, "input_layers": {}, "inplace_firsts": {},
    "inplace_elements": {}, "builder_args": {}, "builder_alts": {}, "builder_arms": {}, "zero_dropouts": frozenset(),
}


def read_through(scope_class: type) -> type:
    """Give ``scope_class`` a read-only attribute per fact, read from its ``own_class`` (None outside a class:
    :data:`OUTSIDE_A_CLASS`)."""
    def reader(name: str, default: object) -> property:
        def get(self):
            facts = self.own_class
            return default if facts is None else getattr(facts, name)
        return property(get, doc=f"the class's ``{name}`` (:class:`OwnClassFacts`)")
    for name, default in OUTSIDE_A_CLASS.items():
        setattr(scope_class, name, reader(name, default))
    return scope_class


def activation_methods(cls: ast.ClassDef) -> FrozenSet[str]:
    """The methods of ``cls`` that return what one of its submodules returns (``def embed(self, x): return
    self.lin(x)``, also through a view or arithmetic of it; a submodule: an attribute its ``__init__`` assigns, not
    ``self.__class__(...)`` or an inherited method): ``self.embed(x)`` is an activation as ``self.lin(x)`` is, which
    the method's summary does not say (a submodule's output is evidence, not an origin)."""
    methods = [m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.args.args]
    built = {t.attr for m in methods if m.name == "__init__" for node in walk_ast(m) if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
             and t.value.id == m.args.args[0].arg}  # (`self.lin = nn.Linear(...)`: what `__init__` builds)
    found = set()
    for m in methods:
        me = m.args.args[0].arg
        for node in walk_ast(m):
            if isinstance(node, ast.Return) and node.value is not None and any(
                    isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name)
                    and c.func.value.id == me and c.func.attr in built for c in walk_ast(node.value)):
                found.add(m.name)
                break
    return frozenset(found)
