"""Make control flow jump-free: ``break``, ``continue`` and early ``return`` become flags.

After this pass a function body contains no Break/Continue, and a single ``Return`` at its end.
Statements that may be skipped by a jump are guarded by ``if not <flag>:``; loops that may end early
carry the flag that ends them (``For.brk``/``While.brk``).  The reverse sweep then mirrors a purely
structured program.
"""
from .. import ir


class _Loop:
    def __init__(self, skip, brk):
        self.skip, self.brk = skip, brk
        self.used_skip = self.used_brk = False


class Structurer:
    def __init__(self, fn):
        self.fn = fn
        self.n = 0
        self.used_ret = False

    def flag(self, base):
        self.n += 1
        return f"_{base}{self.n}"

    def run(self):
        body = self.fn.body
        returns = [s for s in ir.walk(body) if isinstance(s, ir.Return)]
        jumps = [s for s in ir.walk(body) if isinstance(s, ir.Break) or
                 isinstance(s, (ir.For, ir.While)) and s.orelse]
        simple = (len(returns) == 1 and body and body[-1] is returns[0]) or not returns
        if simple and not jumps:
            if not returns:
                body.append(ir.Return(ir.Const(None), self.fn.origin))
            return self.fn
        o = self.fn.origin
        new, _ = self.block(body, [])
        head = [ir.Assign("_r", ir.Const(None), o)]
        if self.used_ret:
            head.append(ir.Assign("_ret", ir.Const(False), o))
        self.fn.body = head + new + [ir.Return("_r", o)]
        return self.fn

    def block(self, stmts, loops):
        """Returns (new statements, may_jump)."""
        out = []
        for i, s in enumerate(stmts):
            o = s.origin
            if isinstance(s, ir.Return):
                if s.value != "_r":
                    out.append(ir.Assign("_r", s.value, o))
                if loops:
                    for lp in loops:
                        out.append(ir.Assign(lp.skip, ir.Const(True), o))
                        out.append(ir.Assign(lp.brk, ir.Const(True), o))
                        lp.used_skip = lp.used_brk = True
                    # the function's end is reached by leaving every loop; _ret guards what follows
                    out.append(ir.Assign("_ret", ir.Const(True), o))
                    self.used_ret = True
                else:
                    out.append(ir.Assign("_ret", ir.Const(True), o))
                    self.used_ret = True
                return out, True
            if isinstance(s, ir.Continue):
                lp = loops[-1]
                out.append(ir.Assign(lp.skip, ir.Const(True), o))
                lp.used_skip = True
                return out, True
            if isinstance(s, ir.Break):
                lp = loops[-1]
                out.append(ir.Assign(lp.skip, ir.Const(True), o))
                out.append(ir.Assign(lp.brk, ir.Const(True), o))
                lp.used_skip = lp.used_brk = True
                return out, True
            jumped = False
            if isinstance(s, ir.If):
                s.body, j1 = self.block(s.body, loops)
                s.orelse, j2 = self.block(s.orelse, loops)
                jumped = j1 or j2
                out.append(s)
            elif isinstance(s, ir.With):
                s.body, jumped = self.block(s.body, loops)
                out.append(s)
            elif isinstance(s, ir.Try):
                s.body, j1 = self.block(s.body, loops)
                js = [j1]
                for k, (t, n, blk) in enumerate(s.handlers):
                    blk, j = self.block(blk, loops)
                    s.handlers[k] = (t, n, blk)
                    js.append(j)
                s.orelse, j2 = self.block(s.orelse, loops)
                s.finalbody, j3 = self.block(s.finalbody, loops)
                jumped = any(js) or j2 or j3
                out.append(s)
            elif isinstance(s, (ir.For, ir.While)):
                lp = _Loop(self.flag("skip"), self.flag("brk"))
                body, _ = self.block(s.body, loops + [lp])
                if lp.used_skip:
                    body.insert(0, ir.Assign(lp.skip, ir.Const(False), o))
                orelse = s.orelse
                s.orelse = []
                jumped = False
                if lp.used_brk or orelse:
                    out.append(ir.Assign(lp.brk, ir.Const(False), o))
                    s.brk = lp.brk if lp.used_brk else None
                s.body = body
                out.append(s)
                if orelse:
                    orelse, j = self.block(orelse, loops)
                    if lp.used_brk:
                        out.append(ir.If(lp.brk, [], orelse, o))
                    else:
                        out.extend(orelse)
                    jumped = jumped or j
                # a return inside the loop must also skip what follows the loop
                jumped = jumped or self._sets_ret(body)
            else:
                out.append(s)
            if jumped:
                rest, _ = self.block(stmts[i + 1:], loops)
                if rest:
                    guard = loops[-1].skip if loops else "_ret"
                    if loops:
                        loops[-1].used_skip = True
                    out.append(ir.If(guard, [], rest, s.origin))
                return out, True
        return out, False

    def _sets_ret(self, body):
        return any(isinstance(x, ir.Assign) and x.target == "_ret" for x in ir.walk(body))


def structure(fn):
    """Rewrite ``fn`` (an :class:`ir.Function`) in place so it has no jumps; returns it."""
    return Structurer(fn).run()
