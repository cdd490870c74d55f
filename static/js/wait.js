// The wait page (templates/participant/wait.html): the server writes when the next session
// opens in UTC; the participant reads it in their own time zone and language.
import { showLocalTimes } from "./screens.js";

showLocalTimes();
