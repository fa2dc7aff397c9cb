def fn(s: str) -> str:
    t = s.upper()
    if s.startswith("a"):
        t = t + s[1:]
    return t + str(len(s))
