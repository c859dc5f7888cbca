"""Input checks shared by the sections of gtlib.uniform: sizes and an optional device."""

from __future__ import annotations

from ..checks import Device, check_int, check_positive

__all__: list[str] = []


_pos = check_positive


def _sizes(name: str, values, minimum: int = 1) -> list[int]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a sequence of ints")
    if len(values) == 0:
        raise ValueError(f"{name} must not be empty")
    return [
        check_int(f"{name}[{i}]", v, minimum=minimum) for i, v in enumerate(values)
    ]


class _MaybeDevice(Device):
    """A torch device this machine has, or None (the library's default)."""

    def describe(self) -> str:
        return super().describe() + " or None"

    def check(self, name, value):
        return value if value is None else super().check(name, value)


_DEVICE = _MaybeDevice()
