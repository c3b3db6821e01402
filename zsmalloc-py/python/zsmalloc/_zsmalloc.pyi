"""Type stubs of the compiled extension (``zsmalloc._zsmalloc``)."""

from collections.abc import Callable, Iterable, Mapping
from os import PathLike
from types import TracebackType
from typing import TypedDict, final, overload

from typing_extensions import Buffer

__all__ = [
    "Pool",
    "Handle",
    "Handles",
    "View",
    "ZsError",
    "class_table",
    "HANDLE_SIZE",
    "__version__",
]

HANDLE_SIZE: int
__version__: str

_ChainPolicy = str | Callable[[int, int, int], int]
# An explicit class table: (size, chain) pairs or (size, chain, order) triples, or class rows
# with "size", "pages_per_zspage" and optionally "order" (as class_table() returns them), or the
# path of a class-table file. A pair above the page takes the order of multi_page_size.
_ClassTable = (
    Iterable[tuple[int, int]]
    | Iterable[tuple[int, int, int]]
    | Iterable[Mapping[str, object]]
    | str
    | PathLike[str]
)

class _PoolConfigDict(TypedDict):
    page_size: int
    chain_size: int
    class_delta: int
    chain_policy: str
    read_mode: str
    mem_limit_pages: int
    backing: str
    backend: str
    class_table: list[tuple[int, int]] | None
    multi_page_size: int
    payload: bool

class _ReadPlacementDict(TypedDict):
    len: int
    spanning: bool
    copied: int

class _PoolStatsDict(TypedDict):
    pages_compacted: int
    pages_allocated: int
    pages_peak: int
    pages_cached: int
    objs_allocated: int
    objs_inuse: int
    bytes_stored: int
    reads: int
    reads_spanning: int
    read_copy_bytes: int
    writes_spanning: int
    objs_moved: int
    bytes_moved: int

class _ClassStatsDict(TypedDict):
    page_size: int
    index: int
    size: int
    pages_per_zspage: int
    objs_per_zspage: int
    huge: bool
    order: int
    fullness: list[int]
    obj_allocated: int
    obj_used: int
    pages_used: int
    freeable: int
    spanning_per_zspage: int
    tail_waste: int
    worst_merge_waste: int
    first_index: int
    last_index: int
    bytes_stored: int
    reads: int
    reads_spanning: int
    read_copy_bytes: int

class _ClassTableRow(TypedDict):
    page_size: int
    index: int
    size: int
    pages_per_zspage: int
    objs_per_zspage: int
    huge: bool
    order: int
    first_index: int
    last_index: int
    tail_waste: int
    spanning_per_zspage: int
    worst_merge_waste: int

class ZsError(OSError):
    """A refused handle: freed, stale, of another pool, already in use, or busy."""

    errno: int

@final
class Pool:
    """A zsmalloc pool; safe to share between threads."""

    def __new__(
        cls,
        name: str = "pool",
        *,
        page_size: int = 4096,
        chain_size: int = 8,
        class_delta: int = 0,
        chain_policy: _ChainPolicy = "classic",
        read_mode: str = "copy",
        mem_limit_pages: int = 0,
        backing: str = "anonymous",
        backend: str = "zsmalloc",
        class_table: _ClassTable | None = None,
        multi_page_size: int = 0,
        payload: bool = True,
    ) -> Pool: ...
    @classmethod
    def from_env(cls, name: str = "pool") -> Pool: ...
    @classmethod
    def wrap(cls, address: int) -> Pool: ...
    @property
    def address(self) -> int: ...
    @property
    def borrowed(self) -> bool: ...
    @property
    def name(self) -> str: ...
    @property
    def config(self) -> _PoolConfigDict: ...
    @property
    def page_size(self) -> int: ...
    @property
    def total_pages(self) -> int: ...
    @property
    def huge_class_size(self) -> int: ...
    @property
    def max_object_size(self) -> int: ...
    def huge_class_size_band(self, band: int) -> int: ...
    def lookup_class_index(self, size: int) -> int: ...
    def store(self, data: Buffer) -> Handle: ...
    def malloc(self, size: int) -> Handle: ...
    def write(self, handle: Handle, data: Buffer) -> None: ...
    def read(self, handle: Handle) -> bytes: ...
    def read_placement(self, handle: Handle) -> _ReadPlacementDict: ...
    @property
    def payload(self) -> bool: ...
    def read_into(self, handle: Handle, buffer: Buffer) -> int: ...
    def view(self, handle: Handle) -> View: ...
    def free(self, handle: Handle | Handles) -> None: ...
    def compact(self) -> int: ...
    def stats(self) -> _PoolStatsDict: ...
    def class_stats(self) -> list[_ClassStatsDict]: ...
    def class_table(self) -> list[_ClassTableRow]: ...
    def store_many(
        self, items: Iterable[Buffer] | Buffer, lengths: Iterable[int] | None = None
    ) -> Handles: ...
    @overload
    def read_many(self, handles: Handles | Iterable[Handle], out: None = None) -> list[bytes]: ...
    @overload
    def read_many(self, handles: Handles | Iterable[Handle], out: Buffer) -> int: ...
    def read_raw(self, handle_address: int) -> bytes: ...

@final
class Handle:
    """One stored object; dropping the last reference to a live handle frees it."""

    def __len__(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def alive(self) -> bool: ...
    @property
    def address(self) -> int: ...
    @property
    def word(self) -> int: ...
    @property
    def pool(self) -> Pool: ...
    def free(self) -> None: ...

@final
class Handles:
    """A packed array of stored objects (one handle word each)."""

    def __len__(self) -> int: ...
    @property
    def lengths(self) -> list[int]: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def live(self) -> int: ...
    @property
    def pool(self) -> Pool: ...
    def alive(self, i: int) -> bool: ...
    def address(self, i: int) -> int: ...
    def read(self, i: int) -> bytes: ...
    def take(self, i: int) -> Handle: ...
    def free(self) -> int: ...

@final
class View:
    """An open read section exporting the object's bytes read-only."""

    def __enter__(self) -> memoryview: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool: ...
    def __buffer__(self, flags: int) -> memoryview: ...
    def __len__(self) -> int: ...
    def release(self) -> None: ...
    def tobytes(self) -> bytes: ...
    @property
    def copied(self) -> bool: ...
    @property
    def open(self) -> bool: ...

def class_table(
    *,
    page_size: int = 4096,
    chain_size: int = 8,
    class_delta: int = 0,
    chain_policy: _ChainPolicy = "classic",
    read_mode: str = "copy",
    mem_limit_pages: int = 0,
    backing: str = "anonymous",
    class_table: _ClassTable | None = None,
    multi_page_size: int = 0,
) -> list[_ClassTableRow]: ...
