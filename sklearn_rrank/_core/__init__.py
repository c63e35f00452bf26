"""The core layer: kernels that trust their input, and the validation of the doors.

Holds the input checks shared by every public entry point (``_validation``), the
rounding primitives and certificates (``_rounding``), the result containers
(``_results``), the trivial certificate (``_trivial``), memory estimates and guards
(``_memory``), the live progress line (``_progress``), the HiGHS batch LP engine
(``_lp_engine``), batched separation (``_separation``) and the thread pools of the
kernels (``_parallel``).

May import: numpy, scipy, scikit-learn, joblib, highspy and other ``_core`` modules
only.
"""
