"""The tiny engine's replayer: it drives the workflow generator, hands each yielded step to the matcher with the
line that yielded it, sends the recorded result back, and never runs a step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replaytest.history import History
from replaytest.replay.adapter import NeutralReplayer, ReplayOptions, WorkflowSet
from replaytest.replay.divergence import SourcePosition
from replaytest.replay.engine import DivergenceFound, Issued, Matcher, ReachedEnd, Recorded, RecordedEvents


class TinyReplayer(NeutralReplayer):
    engine = "tiny"

    def replay_history(
        self, history: History, workflows: WorkflowSet, options: ReplayOptions, path: Path | None = None
    ) -> Any:
        result = self.new_result(history, path)
        if result.status == "error":
            return result
        functions = {getattr(obj, "__tiny_workflow__", None): obj for obj in workflows.objects}
        function = functions.get(history.workflow.type)
        if function is None:
            result.status, result.error = "stale", f"no current tiny workflow named {history.workflow.type!r}"
            return result

        def recorded(event: Any) -> Recorded:
            return Recorded(seq=event.seq, kind=event.kind, name=event.name, payload=event)

        matcher = Matcher(RecordedEvents(history.events, recorded), history.status, options)
        run = function(history.input)
        answer: Any = None
        try:
            while True:
                try:
                    kind, name, _argument = run.send(answer)
                except StopIteration:
                    matcher.finish()
                    break
                frame = run.gi_frame
                source = SourcePosition(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
                answer = history.event_result(matcher.issue(Issued(kind, name, source=source)).payload)
        except DivergenceFound as found:
            result.status, result.divergence = "diverged", found.divergence
        except ReachedEnd:
            pass  # an unfinished run resumes here
        return result
