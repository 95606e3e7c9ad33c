"""Code the tests share: builders, fakes and fixtures; never a test of its own."""
