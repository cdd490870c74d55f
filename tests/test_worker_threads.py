"""A test process runs torch and the BLAS on the threads tests/conftest.py sets (one unless
OMP_NUM_THREADS was set before pytest): three workers on two cores whose tiny-model operations
each split over more threads wait on each other's cores (docs/measurements.md, The test suite).
Importing torch or numpy before the conftest sets the variable would undo it silently."""
import os


def test_torch_and_the_blas_run_on_the_threads_the_conftest_sets():
    import torch
    from threadpoolctl import threadpool_info

    threads = int(os.environ.get("OMP_NUM_THREADS", "1"))
    assert torch.get_num_threads() == threads
    blas = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert blas and set(blas) == {threads}, threadpool_info()
