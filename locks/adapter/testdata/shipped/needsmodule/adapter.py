"""An adapter whose library is missing (TestShippedWithoutItsLibrary)."""
import lockharness_no_such_module  # noqa: F401
