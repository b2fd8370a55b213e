"""The model runtime: loading a model (loading.py) and naming the ones this machine has (catalogue.py), the
attention arithmetic, the answer's KV cache and decode loop (generate.py), the hand-written fast decode step
(decode_step.py, compiled_step.py, graphed_step.py, exact_ops.py, q4.py) with its switch (switch.py), devices,
threads and what differs between transformers releases (compat.py). It imports nothing above it."""
