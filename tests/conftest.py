"""Root of the test tree. Its presence puts ``tests/`` on ``sys.path`` (pytest's rootdir-relative
``prepend`` import mode), so every test folder can import the shared helpers of
``tests/support/`` as ``from support.<module> import ...``."""
