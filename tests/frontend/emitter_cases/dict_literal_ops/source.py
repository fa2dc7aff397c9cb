def fn(k: str) -> Dict[str, int]:
    d = {"a": 1, "b": 2}
    d[k] = 3
    if "a" in d:
        d["c"] = d["a"]
    return d
