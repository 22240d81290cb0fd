// standalone.js — mounts the tavern panel on index.html (?session=<id>).
import { mount } from './tavern.js';

mount(document.getElementById('tavern'));
